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

/** Which of its two paths a request is on. */
export type LegacySseRoute = 'stream' | 'messages';

/** The transport's two paths, beside the Streamable HTTP endpoint: `/mcp` → `/sse` and `/messages`. */
export function legacySsePaths(streamablePath: string): Record<LegacySseRoute, string> {
  const base = streamablePath.slice(0, streamablePath.lastIndexOf('/') + 1);
  return { stream: `${base}sse`, messages: `${base}messages` };
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
