import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  WebStandardStreamableHTTPServerTransport,
  type WebStandardStreamableHTTPServerTransportOptions,
} from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

type NodeRequest = IncomingMessage & { auth?: AuthInfo };

/**
 * The SDK's Streamable HTTP transport served on Node's `http`, as the SDK's own
 * Node transport does (`@hono/node-server` turns the Node request into a web
 * Request), except that an SSE response is written here, not by the adapter.
 *
 * Why: for a body not marked chunked, the adapter reads up to two chunks
 * before it writes the headers, and when the first is ready and the second is
 * not it waits on `setTimeout` (≥ 1 ms in Node) for it. With an event store,
 * the SDK enqueues a priming event the moment a POST's stream opens, so every
 * call through a stateful front waited that timer after the upstream had
 * already answered (bench/results/NOTES.md §4). Marked chunked, the adapter would
 * skip the probe but send the headers, each event and the end as separate
 * writes. Here each event is written the moment it is ready, with no timer:
 * the headers go out with the first event when it is ready at once (else
 * alone, at once), and the end goes with the last event when the stream is
 * already over by then — one write each for the usual priming event and answer.
 */
export class NodeStreamableTransport extends WebStandardStreamableHTTPServerTransport {
  /** The body the front already parsed, per request: the adapter's callback only sees the request. */
  readonly #parsedBodies = new WeakMap<IncomingMessage, unknown>();
  readonly #listener: (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<unknown>;

  constructor(options: WebStandardStreamableHTTPServerTransportOptions) {
    super(options);
    this.#listener = getRequestListener(
      async (request, env) => {
        // Only ever called from `serve`, with Node's http/1 request and response.
        const incoming = env.incoming as NodeRequest;
        const response = await this.handleRequest(request, {
          ...(incoming.auth ? { authInfo: incoming.auth } : {}),
          ...(this.#parsedBodies.has(incoming) ? { parsedBody: this.#parsedBodies.get(incoming) } : {}),
        });
        if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream'))
          return response;
        await writeEvents(response, env.outgoing as ServerResponse);
        return RESPONSE_ALREADY_SENT;
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

/** What a read gives when it is not ready yet (see `readyNow`). */
const NOT_READY = Symbol('not ready');

/** The read's result if it is settled by now (a few microtasks), else NOT_READY: never a timer. */
function readyNow<T>(read: Promise<T>): Promise<T | typeof NOT_READY> {
  return Promise.race([read, Promise.resolve().then((): typeof NOT_READY => NOT_READY)]);
}

/**
 * Streams an SSE response to Node. Node corks a chunked response's writes until
 * the next tick, so a write and an `end` made in the same turn leave as one.
 * The client leaving cancels the stream (the SDK then forgets it), as the
 * adapter would.
 */
async function writeEvents(response: Response, res: ServerResponse): Promise<void> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  res.once('close', cancel);
  try {
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    res.writeHead(response.status, headers);
    let read = reader.read();
    const first = await readyNow(read);
    // Nothing to send yet (a GET stream, a POST without a priming event): the headers go now, alone.
    if (first === NOT_READY) res.flushHeaders();
    for (;;) {
      const { done, value } = await read;
      // Gone, or ended by the front (a GET stream whose token expired): a write now would only
      // fail, and a write after end emits an 'error' nobody listens for. The close that follows
      // cancels the stream.
      if (done || res.destroyed || res.writableEnded) break;
      res.write(value);
      read = reader.read();
    }
    if (!res.destroyed && !res.writableEnded) res.end();
  } catch {
    // The stream failed (or the client left and it was cancelled): the response cannot be completed.
    res.destroy();
  } finally {
    res.off('close', cancel);
  }
}
