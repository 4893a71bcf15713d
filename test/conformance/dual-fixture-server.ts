/**
 * The dual-revision conformance fixture: a plain MCP server on the official v2
 * SDK (no Idem) that serves MCP 2025-11-25 and 2026-07-28 from one factory
 * (dual-fixture.ts). The gateway is proven invisible for both revisions by
 * running the 0.2 conformance suite against it directly and through the gateway.
 *
 *   node --import tsx test/conformance/dual-fixture-server.ts --stdio
 *   node --import tsx test/conformance/dual-fixture-server.ts --port 0   # prints "listening <url>"
 *
 * Over HTTP (http://127.0.0.1:<port>/mcp) a request is routed by era, with the
 * SDK's own classifier (`isLegacyRequest`): 2026-07-28 requests go to
 * `createMcpHandler` (modern only, per request); 2025-era traffic goes to a
 * sessionful Streamable HTTP transport with an event store, as the SDK's
 * legacy-routing example does. Why not `createMcpHandler`'s default stateless
 * legacy leg: it has no sessions, so the 2025 suite's session, SSE-polling and
 * subscription scenarios would have nothing to test, and this fixture is the
 * reference the gateway is compared with. Host/Origin must be loopback names.
 *
 * Over stdio `serveStdio` pins each connection to the era its opening
 * exchange chose (initialize → 2025, server/discover → 2026-07-28).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createDualFixtureServer, type DualFixtureState, newDualFixtureState } from './dual-fixture.js';
import { MemoryEventStore } from './fixture-server.js';

export interface ServedDualFixture {
  url: string;
  state: DualFixtureState;
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
export async function serveDualFixtureHttp(
  options: { port?: number; state?: DualFixtureState } = {},
): Promise<ServedDualFixture> {
  const state = options.state ?? newDualFixtureState();
  const modern: McpHttpHandler = createMcpHandler(() => createDualFixtureServer(state), { legacy: 'reject' });
  state.notifier = modern.notify;
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
    await createDualFixtureServer(state).connect(transport);
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
    if (!(await isLegacyRequest(request.clone()))) return modern.fetch(request);
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
    close: async () => {
      for (const transport of [...sessions.values()]) await transport.close();
      await modern.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--stdio')) {
    const state = newDualFixtureState();
    serveStdio(() => createDualFixtureServer(state));
    return;
  }
  const portIndex = argv.indexOf('--port');
  const port = portIndex >= 0 ? Number(argv[portIndex + 1]) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write('usage: dual-fixture-server.ts --stdio | --port <n> (0: any free port)\n');
    process.exit(2);
  }
  const served = await serveDualFixtureHttp({ port });
  process.stdout.write(`listening ${served.url}\n`);
  const stop = () => {
    served.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
