/**
 * An MCP server that speaks only the 2024-11-05 HTTP+SSE transport, as old servers do: GET /sse
 * opens a session's event stream (its first event names /messages?sessionId=…), POST /messages
 * delivers a message; anything else is 404 — a Streamable HTTP POST included. Each session serves
 * the counting server's tools (test/gateway/fixtures/counting-server.ts), counting into `dir`.
 * The SDK's own SSEServerTransport, on 127.0.0.1.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { createCountingServer } from '../gateway/fixtures/counting-server.js';

export interface SseUpstream {
  /** The event stream's URL (…/sse): what a client is given. */
  url: string;
  /** How many event streams were opened (one per client session). */
  streams(): number;
  close(): Promise<void>;
}

export async function serveSseUpstream(dir: string): Promise<SseUpstream> {
  const sessions = new Map<string, SSEServerTransport>();
  let streams = 0;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/sse') {
      streams++;
      const transport = new SSEServerTransport('/messages', res);
      sessions.set(transport.sessionId, transport);
      res.once('close', () => sessions.delete(transport.sessionId));
      void createCountingServer(dir).connect(transport);
      return;
    }
    const session = sessions.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && url.pathname === '/messages' && session) {
      void session.handlePostMessage(req, res).catch(() => {});
      return;
    }
    res.writeHead(404).end('Not Found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    streams: () => streams,
    close: async () => {
      for (const transport of sessions.values()) await transport.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
