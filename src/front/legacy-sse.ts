/**
 * The 2024-11-05 HTTP+SSE transport at the HTTP front (`listen.http.sse`), for clients that predate
 * Streamable HTTP: GET `/sse` opens a session's event stream, whose first event (`endpoint`) names
 * where to POST its messages (`/messages?sessionId=…`); every answer rides the stream. The SDK's
 * SSEServerTransport writes the stream and reads the POSTs; http.ts runs the same checks before it
 * as before Streamable HTTP (Host/Origin, CORS, auth, the session's owner, body limits, scopes,
 * draining), and the messages pass the same receipts to the same gateway session.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import type { AdmittingTransport } from '../receipts/receipt-transport.js';
import { checkedBody, type PostChecks, requestsBeyondHandshake, shuttingDown } from './post-checks.js';
import { rpcError, sendJson } from './replies.js';
import { refuse } from './request-body.js';
import type { ServedSession, SessionsFull, TableSession } from './session-table.js';

/** Which of its two paths a request is on. */
export type LegacySseRoute = 'stream' | 'messages';

/** The transport's two paths, beside the Streamable HTTP endpoint: `/mcp` → `/sse` and `/messages`. */
export function legacySsePaths(streamablePath: string): Record<LegacySseRoute, string> {
  const base = streamablePath.slice(0, streamablePath.lastIndexOf('/') + 1);
  return { stream: `${base}sse`, messages: `${base}messages` };
}

/** A session of this transport, in the front's session table beside the Streamable HTTP ones. */
export interface SseSession extends TableSession {
  sse: LegacySseTransport;
  receipts: AdmittingTransport;
  /** Who opened it (the bearer principal; '' without auth): nobody else may post to it. */
  owner: string;
}

/** What serving the transport needs of the front (http.ts). */
export interface LegacySseFront {
  paths: Record<LegacySseRoute, string>;
  /** The front's session table: these sessions count under the same caps as the Streamable HTTP ones. */
  sessions: {
    get(id: string): TableSession | undefined;
    admit(session: SseSession): SessionsFull | undefined;
    identified(id: string, session: SseSession): void;
    forget(session: SseSession, id: string | undefined): void;
  };
  draining(): boolean;
  postChecks(): PostChecks;
  /** A new session's fields but its transport, the actor the caps count it against given by the front. */
  newSession(owner: string, auth: AuthInfo | undefined): Omit<SseSession, 'sse'>;
  wrap(transport: Transport): AdmittingTransport;
  attach(transport: AdmittingTransport): Promise<ServedSession | undefined>;
  busyUntilDone(session: SseSession, res: ServerResponse): void;
  endWhenTokenExpires(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse): void;
}

type Request = IncomingMessage & { auth?: AuthInfo };

/**
 * One request on the transport's paths, past the checks every request gets (Host/Origin, CORS,
 * auth): GET on the stream's path opens a session, counted by the caps as an initialize is; a POST
 * on the messages' path reaches only its owner's session, and is read, checked and authorized as a
 * Streamable HTTP POST is (post-checks.ts), then delivered: 202, its answer on the stream.
 */
export async function serveLegacySse(
  route: LegacySseRoute,
  req: Request,
  res: ServerResponse,
  owner: string,
  front: LegacySseFront,
): Promise<void> {
  const method = route === 'stream' ? 'GET' : 'POST';
  if (req.method !== method) {
    res.setHeader('allow', method);
    refuse(req, res, 405, rpcError(-32000, `Method not allowed: ${method} only on ${front.paths[route]}`));
    return;
  }
  if (route === 'stream') await openStream(req, res, owner, front);
  else await deliver(req, res, owner, front);
}

async function openStream(req: Request, res: ServerResponse, owner: string, front: LegacySseFront) {
  if (front.draining()) {
    res.setHeader('retry-after', '1');
    sendJson(res, 503, shuttingDown(undefined));
    return;
  }
  // Its transport is set once the caps have counted it (the client names itself only later, in its initialize).
  const session = front.newSession(owner, req.auth) as SseSession;
  const full = front.sessions.admit(session);
  if (full) {
    sendJson(res, full.status, full.reply(null));
    return;
  }
  session.sse = new LegacySseTransport(front.paths.messages, res);
  session.receipts = front.wrap(session.sse);
  front.busyUntilDone(session, res);
  // The stream is the session: a token that expires ends both (the transport cannot resume).
  front.endWhenTokenExpires(req, res);
  try {
    // Starts the transport: the stream's headers and its endpoint event go out.
    session.served = (await front.attach(session.receipts)) ?? undefined;
  } catch (error) {
    front.sessions.forget(session, undefined);
    throw error;
  }
  front.sessions.identified(session.sse.sessionId, session);
  const closed = session.receipts.onclose;
  session.receipts.onclose = () => {
    closed?.();
    front.sessions.forget(session, session.sse.sessionId);
  };
}

async function deliver(req: Request, res: ServerResponse, owner: string, front: LegacySseFront) {
  const id = new URL(req.url ?? '/', 'http://localhost').searchParams.get('sessionId');
  const found = id ? front.sessions.get(id) : undefined;
  // Another actor's session does not exist for this caller (same answer as an unknown id).
  const session =
    found && 'sse' in found && (found as SseSession).owner === owner ? (found as SseSession) : undefined;
  if (!session) {
    refuse(req, res, 404, rpcError(-32001, 'Session not found'));
    return;
  }
  const body = await checkedBody(req, res, front.postChecks());
  if (body === undefined) return;
  front.busyUntilDone(session, res);
  if (requestsBeyondHandshake(body)) session.used = true;
  await session.sse.post(req, res, body);
}

/**
 * One session of the transport: the SDK's SSEServerTransport on the GET's response. Its session
 * ends with the stream (the transport has no resumability): the client leaving, the front
 * closing it, or the token it was opened with expiring.
 */
export class LegacySseTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  readonly #sse: SSEServerTransport;
  #closed = false;

  constructor(messagesPath: string, res: ServerResponse) {
    this.#sse = new SSEServerTransport(messagesPath, res);
    this.#sse.onmessage = (message, extra) => this.onmessage?.(message, extra);
    this.#sse.onerror = (error) => this.onerror?.(error);
    // The SDK calls it twice when it ends the stream itself (once in close, once on the response's close).
    this.#sse.onclose = () => {
      if (this.#closed) return;
      this.#closed = true;
      this.onclose?.();
    };
  }

  get sessionId(): string {
    return this.#sse.sessionId;
  }

  /** Writes the stream's headers and its `endpoint` event. */
  start(): Promise<void> {
    return this.#sse.start();
  }

  send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    return this.#sse.send(message);
  }

  close(): Promise<void> {
    return this.#sse.close();
  }

  /**
   * Delivers one POSTed message, its body already read and checked by the front: 202, then the
   * answer on the stream; the SDK's 400 for a body it refuses (a content type other than JSON).
   */
  async post(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, body: unknown): Promise<void> {
    try {
      await this.#sse.handlePostMessage(req, res, body);
    } catch {
      // The stream went just before (the SDK has answered 500): the session is over.
    }
  }
}
