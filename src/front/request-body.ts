/**
 * Reading a request's body, and refusing a request whose body is still on its
 * way (too large, or refused before it was read) so that its client sees the
 * answer: see `answerThenDrain`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { rpcError, sendJson } from './replies.js';

/** Largest request body accepted, as the SDK's own limit. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * How much of a refused request's body is read and dropped, and for how long,
 * before the connection is closed anyway: enough for a client that sent a few
 * MiB too many to finish and read its answer; a client sending without end,
 * or trickling, does not keep the socket.
 */
export const DRAIN_LIMITS = { bytes: 4 * MAX_BODY_BYTES, ms: 1_500 };

/**
 * Answers (via `send`), then reads and drops the rest of the body. Closing the
 * socket while the client is still writing makes the kernel reset the
 * connection, and a reset discards the answer the client has not read yet: it
 * sees EPIPE or ECONNRESET instead (about half the time for a 5 MiB POST,
 * issue 25). A body that ends within DRAIN_LIMITS leaves the connection usable;
 * past them the answer is ended with a FIN (what was sent is complete) and the
 * socket destroyed a moment later.
 */
export function answerThenDrain(req: IncomingMessage, send: () => void): void {
  send();
  if (req.complete) return;
  const socket = req.socket;
  let drained = 0;
  const hangUp = () => {
    clearTimeout(deadline);
    req.off('data', count);
    socket.end();
    setTimeout(() => socket.destroy(), DRAIN_LIMITS.ms).unref();
  };
  const count = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMITS.bytes) hangUp();
  };
  const deadline = setTimeout(hangUp, DRAIN_LIMITS.ms);
  deadline.unref();
  req.on('data', count);
  req.once('end', () => clearTimeout(deadline));
  req.once('close', () => clearTimeout(deadline));
  req.resume();
}

/** An early refusal (before the body is read): answered, and the body drained (answerThenDrain). */
export function refuse(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
  answerThenDrain(req, () => {
    if (body === undefined) res.writeHead(status).end();
    else sendJson(res, status, body);
  });
}

function refuseTooLarge(req: IncomingMessage, res: ServerResponse): void {
  refuse(req, res, 413, rpcError(-32600, `Request body larger than ${MAX_BODY_BYTES} bytes`));
}

/** Reads and parses the body; on a bad body answers with the JSON-RPC error itself and returns undefined. */
export async function readJsonBody(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    refuseTooLarge(req, res);
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const complete = await new Promise<boolean>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      resolve(false);
    };
    req.on('data', onData);
    req.once('end', () => resolve(true));
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the request was aborted'));
    });
  });
  if (!complete) {
    refuseTooLarge(req, res);
    return undefined;
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    sendJson(res, 400, rpcError(-32700, 'Parse error: the body is not valid JSON'));
    return undefined;
  }
}
