import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { isErrorResponse, isNotification, isResponse } from '../protocol/message-kind.js';
import { HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY } from '../protocol/revisions.js';

/**
 * One 2026-07-28 request over Streamable HTTP, as a transport: the POST is
 * the whole conversation. The request goes in; what the gateway sends back
 * that belongs to it (progress, log messages, the response) comes out on the
 * POST's own answer — JSON when the response is the only message, an SSE
 * stream as soon as a notification comes first.
 *
 * The revision has no sessions and no `notifications/cancelled` over HTTP: a
 * client that closes the stream before the response has cancelled the
 * request. That reaches the gateway as a cancellation of the request's id,
 * which after dispatch makes the outcome `unknown` (docs/protocol.md).
 */
export class ModernExchange implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  readonly sessionId = undefined;

  readonly #request: JSONRPCRequest;
  readonly #res: ServerResponse;
  readonly #extra: MessageExtraInfo;
  readonly #streams: boolean;
  #streaming = false;
  #answered = false;
  #closed = false;

  constructor(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, request: JSONRPCRequest) {
    this.#request = request;
    this.#res = res;
    this.#streams = /text\/event-stream/i.test(String(req.headers.accept ?? ''));
    this.#extra = {
      ...(req.auth ? { authInfo: req.auth } : {}),
      requestInfo: { headers: req.headers },
    };
    res.once('close', () => {
      if (!this.#answered && !this.#closed) {
        // The client went away first: for this revision that is the cancellation of the request.
        this.onmessage?.({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: request.id, reason: 'the client closed the request stream' },
        });
      }
      void this.close();
    });
  }

  /** Hands the request to whoever was attached (the receipts, then the gateway session). */
  async start(): Promise<void> {}

  deliver(): void {
    this.onmessage?.(this.#request, this.#extra);
  }

  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    if (this.#answered || this.#res.writableEnded || this.#res.destroyed) return;
    if (isResponse(message)) {
      // Only this request's answer can come back on this POST.
      if ((message as { id?: unknown }).id !== this.#request.id) return;
      this.#answered = true;
      if (this.#streaming) this.#res.end(sseEvent(message));
      else
        this.#res
          .writeHead(httpStatusOf(message), { 'content-type': 'application/json' })
          .end(JSON.stringify(message));
      return;
    }
    // Notifications that belong to the request ride its stream; a client that takes only JSON
    // asked not to get them. Requests to the client have no channel in this revision.
    if (!isNotification(message) || !this.#streams) return;
    if (!this.#streaming) {
      this.#streaming = true;
      this.#res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
    }
    this.#res.write(sseEvent(message));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#res.writableEnded && !this.#res.destroyed) {
      // Closed without an answer (the gateway is shutting down): say so rather than hang.
      if (!this.#res.headersSent)
        this.#res.writeHead(503, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: this.#request.id,
            error: { code: -32603, message: 'The gateway closed before answering' },
          }),
        );
      else this.#res.end();
    }
    this.onclose?.();
  }
}

/**
 * The HTTP status of a 2026-07-28 answer sent as JSON: the revision wants
 * "method not found" as 404 (removed methods included) and a missing client
 * capability (-32021) or a header that disagrees with the body (-32020) as
 * 400; every other answer, errors included, is 200.
 * (An answer on an open stream keeps the 200 the stream began with.)
 */
function httpStatusOf(message: JSONRPCMessage): number {
  if (!isErrorResponse(message)) return 200;
  if (message.error.code === -32601) return 404;
  if (message.error.code === MISSING_REQUIRED_CLIENT_CAPABILITY || message.error.code === HEADER_MISMATCH)
    return 400;
  return 200;
}

function sseEvent(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
