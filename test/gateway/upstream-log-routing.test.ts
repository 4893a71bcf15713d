/**
 * Issue 25 item 7: what an upstream sends rides a client request's stream
 * only when the upstream sent it about that request. The upstream here is
 * the official SDK's low-level Server over Streamable HTTP (one per session):
 * its tool `work` first writes a server-wide log line (on its standalone
 * stream, about no request), then two about the call (on the call's own
 * stream, at debug and info). Through the gateway, the call's stream carries
 * the two and never the server-wide one, which a 2025-era session gets on
 * its own standalone stream; a 2026-07-28 call gets only what is at or above
 * the level it asked for, and without a level nothing.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENVELOPE } from '../../src/protocol/revisions.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { MCP_HEADERS, messagesOf, rawRequest, rawSession } from '../support/raw-http.js';
import { removeTemporaries } from '../support/temp-dirs.js';

const SERVER_WIDE = 'server-wide: not about any call';

/** One upstream session: its SDK server, and a promise kept once its standalone stream is open. */
interface UpstreamSession {
  transport: StreamableHTTPServerTransport;
  standaloneOpen: Promise<void>;
  openStandalone(): void;
}

function newUpstreamServer(session: () => UpstreamSession): Server {
  const server = new Server(
    { name: 'log-routing', version: '1' },
    { capabilities: { tools: {}, logging: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{ name: 'work', description: 'Logs, then answers.', inputSchema: { type: 'object' } }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
    // Only once the gateway listens on the standalone stream can a message sent there reach it.
    await session().standaloneOpen;
    await server.sendLoggingMessage({ level: 'warning', data: SERVER_WIDE });
    for (const level of ['debug', 'info'] as const)
      await extra.sendNotification({
        method: 'notifications/message',
        params: { level, data: `about this call, at ${level}` },
      });
    return { content: [{ type: 'text', text: 'worked' }] };
  });
  return server;
}

async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, UpstreamSession>();
  const http: HttpServer = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    const known = typeof id === 'string' ? sessions.get(id) : undefined;
    if (known) {
      if (req.method === 'GET') {
        // The SDK answers a GET once its standalone stream is registered; the answer then stays
        // open, so its head being written is the moment the stream can carry a message.
        const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => typeof res;
        res.writeHead = ((...args: unknown[]) => {
          const written = writeHead(...args);
          known.openStandalone();
          return written;
        }) as typeof res.writeHead;
      }
      await known.transport.handleRequest(req, res);
      return;
    }
    let open = () => {};
    const standaloneOpen = new Promise<void>((resolve) => {
      open = resolve;
    });
    const entry: UpstreamSession = {
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, entry);
        },
      }),
      standaloneOpen,
      openStandalone: open,
    };
    await newUpstreamServer(() => entry).connect(entry.transport);
    await entry.transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: async () => {
      for (const { transport } of sessions.values()) await transport.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

const logLines = (messages: Record<string, unknown>[]) =>
  messages
    .filter((m) => m.method === 'notifications/message')
    .map((m) => (m.params as { data?: unknown }).data);

/**
 * A 2026-07-28 tools/call of `work` on its own POST (no session), with `logLevel` in its envelope
 * if given. Each client names itself apart: one actor's same call again would be a replay.
 */
async function modernCall(url: string, client: string, logLevel?: string) {
  const response = await rawRequest(url, {
    headers: {
      ...MCP_HEADERS,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'work',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: {
        name: 'work',
        arguments: {},
        _meta: {
          [ENVELOPE.protocolVersion]: '2026-07-28',
          [ENVELOPE.clientCapabilities]: {},
          [ENVELOPE.clientInfo]: { name: client, version: '1' },
          ...(logLevel ? { [ENVELOPE.logLevel]: logLevel } : {}),
        },
      },
    }),
  });
  return messagesOf(response);
}

describe('an upstream log line reaches the request it is about, and only that one', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let running: RunningGateway;

  beforeAll(async () => {
    upstream = await startUpstream();
    running = await startHttpGateway({ upstreams: { up: { url: upstream.url } } });
  });
  afterAll(async () => {
    await running?.close();
    await upstream?.close();
    removeTemporaries();
  });

  it("2025-11-25 session: the call's stream carries its own two log lines, the server-wide one goes to the session's standalone stream", async () => {
    const session = await rawSession(running.url, 'agent-2025');
    const standalone = await fetch(running.url, {
      headers: { ...session.headers, accept: 'text/event-stream' },
    });
    expect(standalone.status).toBe(200);
    let onStandalone = '';
    const reader = (standalone.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        onStandalone += value;
      }
    })();

    const response = await session.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'work', arguments: {} },
    });
    const messages = messagesOf(response);
    expect(messages.find((m) => m.id === 1)).toMatchObject({ result: { content: [{ text: 'worked' }] } });
    expect(logLines(messages)).toEqual(['about this call, at debug', 'about this call, at info']);
    await vi.waitFor(() => expect(onStandalone).toContain(SERVER_WIDE), { timeout: 10_000 });
    expect(onStandalone).not.toContain('about this call');
    await reader.cancel();
  });

  it('2026-07-28 call without logLevel: no log line at all on its stream', async () => {
    const messages = await modernCall(running.url, 'agent-no-level');
    expect(messages.find((m) => m.id === 7)).toMatchObject({ result: { content: [{ text: 'worked' }] } });
    expect(logLines(messages)).toEqual([]);
  });

  it('2026-07-28 call at logLevel info: its own info line only (not its debug one, not the server-wide warning)', async () => {
    const messages = await modernCall(running.url, 'agent-at-info', 'info');
    expect(messages.find((m) => m.id === 7)).toMatchObject({ result: { content: [{ text: 'worked' }] } });
    expect(logLines(messages)).toEqual(['about this call, at info']);
  });
});
