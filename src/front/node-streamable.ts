import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  WebStandardStreamableHTTPServerTransport,
  type WebStandardStreamableHTTPServerTransportOptions,
} from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

type NodeRequest = IncomingMessage & { auth?: AuthInfo };

/**
 * The SDK's Streamable HTTP transport served on Node's `http`, as the SDK's own
 * Node transport does (`@hono/node-server` converts between the two), with one
 * difference: an SSE response is sent chunked from its first byte.
 *
 * Why: for a body not marked chunked, the adapter reads up to two chunks
 * before it writes the headers, and when the first is ready and the second is
 * not it waits on `setTimeout` (≥ 1 ms in Node) for it. With an event store,
 * the SDK enqueues a priming event the moment a POST's stream opens, so every
 * call through a stateful front waited that timer after the upstream had
 * already answered (docs/benchmarks.md §4). Marked chunked, the adapter skips
 * the probe: the headers go at once and each event is written as it comes.
 * Only HTTP/1.1 requests are marked: HTTP/1.0 has no chunked encoding (its SSE
 * ends with the connection, as before).
 */
export class NodeStreamableTransport extends WebStandardStreamableHTTPServerTransport {
  /** The body the front already parsed, per request: the adapter's callback only sees the request. */
  readonly #parsedBodies = new WeakMap<IncomingMessage, unknown>();
  readonly #listener: (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<unknown>;

  constructor(options: WebStandardStreamableHTTPServerTransportOptions) {
    super(options);
    this.#listener = getRequestListener(
      async (request, env) => {
        // Only ever called from `serve`, with Node's http/1 request.
        const incoming = env.incoming as NodeRequest;
        const response = await this.handleRequest(request, {
          ...(incoming.auth ? { authInfo: incoming.auth } : {}),
          ...(this.#parsedBodies.has(incoming) ? { parsedBody: this.#parsedBodies.get(incoming) } : {}),
        });
        if (
          incoming.httpVersionMajor === 1 &&
          incoming.httpVersionMinor >= 1 &&
          response.headers.get('content-type')?.startsWith('text/event-stream')
        )
          response.headers.set('transfer-encoding', 'chunked');
        return response;
      },
      // Leaves the global Request/Response alone (as the SDK's Node transport does).
      { overrideGlobalObjects: false },
    );
  }

  /** Serves one Node request; `parsedBody` is the body when the caller has read it already. */
  async serve(req: NodeRequest, res: ServerResponse, parsedBody?: unknown): Promise<void> {
    if (parsedBody !== undefined) this.#parsedBodies.set(req, parsedBody);
    await this.#listener(req, res);
  }
}
