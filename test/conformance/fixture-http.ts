/**
 * The fixture over Streamable HTTP (http://127.0.0.1:<port>/mcp).
 * A request is routed by era with the SDK's own classifier (`isLegacyRequest`):
 * 2026-07-28 requests go to `createMcpHandler` (modern only, per request);
 * 2025-era traffic goes to a sessionful Streamable HTTP transport with an event
 * store, as the SDK's legacy-routing example does. Why not `createMcpHandler`'s
 * default stateless legacy leg: it has no sessions, so the 2025 suite's
 * session, SSE-polling and subscription scenarios would have nothing to test,
 * and this fixture is the reference the gateway is compared with. Host and
 * Origin must be loopback names.
 *
 * `legacyOnly` serves 2025-era sessions alone, as a server that predates
 * 2026-07-28 does: a 2026-07-28 request opens no session and is refused.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  createMcpHandler,
  InMemoryServerEventBus,
  isLegacyRequest,
  type McpHttpHandler,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { MemoryEventStore } from './event-store.js';
import { createFixtureServer, type FixtureState, newFixtureState } from './fixture.js';

export interface ServedFixture {
  url: string;
  state: FixtureState;
  /** How many `subscriptions/listen` streams are open on it now. */
  openListens(): number;
  close(): Promise<void>;
}

const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

const hostnameOf = (value: string): string | undefined => {
  try {
    return new URL(value).hostname.toLowerCase();
  } catch {
    return undefined;
  }
};

/** Host and Origin must name the loopback interface: a DNS-rebound page gets 403. */
function isLoopbackRequest(request: Request): boolean {
  const host = request.headers.get('host');
  if (!host || !LOOPBACK_HOSTNAMES.has(hostnameOf(`http://${host}`) ?? '')) return false;
  const origin = request.headers.get('origin');
  return origin === null || LOOPBACK_HOSTNAMES.has(hostnameOf(origin) ?? '');
}

function jsonError(status: number, code: number, message: string, id: unknown = null): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id }, { status });
}

/** The id of a JSON-RPC request body, so an error reply keeps it. */
async function requestId(request: Request): Promise<unknown> {
  try {
    const body = (await request.clone().json()) as { id?: unknown };
    return body.id ?? null;
  } catch {
    return null;
  }
}

/** Serves the fixture over Streamable HTTP at http://127.0.0.1:<port>/mcp (port 0: any free port). */
export async function serveFixtureHttp(
  options: {
    port?: number;
    state?: FixtureState;
    /** 2025-era traffic per request too (createMcpHandler's default), without sessions: the baseline of a stateless front. */
    stateless?: boolean;
    /** 2025-era sessions only: no 2026-07-28 handler at all. */
    legacyOnly?: boolean;
  } = {},
): Promise<ServedFixture> {
  if (options.stateless && options.legacyOnly) throw new Error('stateless and legacyOnly exclude each other');
  const state = options.state ?? newFixtureState();
  const bus = new InMemoryServerEventBus();
  const modern: McpHttpHandler | undefined = options.legacyOnly
    ? undefined
    : createMcpHandler(
        () => createFixtureServer(state),
        options.stateless ? { bus } : { bus, legacy: 'reject' },
      );
  state.notifier = modern?.notify;
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  const openSession = async (): Promise<WebStandardStreamableHTTPServerTransport> => {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      eventStore: new MemoryEventStore(),
      retryInterval: 500,
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await createFixtureServer(state).connect(transport);
    return transport;
  };

  const route = async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== '/mcp') return new Response(null, { status: 404 });
    if (!isLoopbackRequest(request))
      return jsonError(
        403,
        -32000,
        'Forbidden: Host and Origin must be a loopback name',
        await requestId(request),
      );
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
      const transport = sessions.get(sessionId);
      return transport
        ? transport.handleRequest(request)
        : jsonError(404, -32001, 'Session not found', await requestId(request));
    }
    if (modern && (options.stateless || !(await isLegacyRequest(request.clone()))))
      return modern.fetch(request);
    if (request.method !== 'POST')
      return jsonError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    // A 2025 POST without a session: the transport accepts only an initialize
    // here; if it refused the request, no session began and the transport goes.
    const transport = await openSession();
    const response = await transport.handleRequest(request);
    if (!transport.sessionId) await transport.close();
    return response;
  };

  const handle = toNodeHandler({ fetch: route });
  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    openListens: () => bus.listenerCount,
    close: async () => {
      for (const transport of [...sessions.values()]) await transport.close();
      await modern?.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
