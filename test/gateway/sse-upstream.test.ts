/**
 * An upstream that speaks only the 2024-11-05 HTTP+SSE transport (issue 46): given by its URL, the
 * gateway finds out (the Streamable HTTP POST is refused, the SSE GET works) or is told
 * (`transport: sse`), and its effectful calls are deduplicated as any other's. A URL that speaks
 * neither says so on stderr, naming both attempts and the URL. Real sockets and processes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type GatewayProcess, startGatewayCli } from '../support/gateway-process.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { type SseUpstream, serveSseUpstream } from '../support/sse-upstream.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

const clients: Client[] = [];
const processes: GatewayProcess[] = [];
const gateways: RunningGateway[] = [];
const upstreams: SseUpstream[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of processes) await gateway.kill();
  for (const gateway of gateways) await gateway.close();
  for (const upstream of upstreams) await upstream.close();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  removeTemporaries();
});

async function clientOf(url: string): Promise<Client> {
  const client = new Client({ name: 'sse-upstream-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

const replayed = (result: CallToolResult) => result._meta?.['io.idem/replayed'] === true;

describe('an SSE-only upstream', () => {
  it('idem gateway -- http://…/sse: found out by the refused POST; a retried call runs once', async () => {
    const dir = freshDir('sse-counts');
    const upstream = await serveSseUpstream(dir);
    upstreams.push(upstream);
    const gateway = await startGatewayCli(['--listen', '127.0.0.1:0', '--', upstream.url], {
      env: { IDEM_DATA_DIR: freshDir('sse-gw') },
    });
    processes.push(gateway);

    const first = await clientOf(gateway.url);
    const { tools } = await first.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['count', 'read_count']));
    const ran = (await first.callTool({ name: 'count', arguments: { key: 'order-1' } })) as CallToolResult;
    expect(ran.isError).toBeFalsy();
    expect(replayed(ran)).toBe(false);

    // The agent lost the answer and came back on a new session: the same intent, not run again.
    const second = await clientOf(gateway.url);
    const again = (await second.callTool({ name: 'count', arguments: { key: 'order-1' } })) as CallToolResult;
    expect(replayed(again)).toBe(true);
    expect(again.structuredContent).toEqual(ran.structuredContent);
    expect(executionsOf(dir, 'order-1')).toBe(1);
    // Each gateway session had its own SSE session upstream.
    expect(upstream.streams()).toBeGreaterThanOrEqual(2);
  });

  it('transport: sse in the config: straight to the event stream, no POST first', async () => {
    const dir = freshDir('sse-counts');
    const upstream = await serveSseUpstream(dir);
    upstreams.push(upstream);
    const gateway = await startHttpGateway({ upstreams: { old: { url: upstream.url, transport: 'sse' } } });
    gateways.push(gateway);
    const client = await clientOf(gateway.url);
    const ran = (await client.callTool({ name: 'count', arguments: { key: 'k' } })) as CallToolResult;
    const again = (await client.callTool({ name: 'count', arguments: { key: 'k' } })) as CallToolResult;
    expect(ran.isError).toBeFalsy();
    expect(replayed(again)).toBe(true);
    expect(executionsOf(dir, 'k')).toBe(1);
  });

  it('a URL that speaks neither transport: stderr names the URL and both attempts', async () => {
    const nothing = createServer((_req, res) => res.writeHead(404).end('Not Found'));
    servers.push(nothing);
    await new Promise<void>((resolve) => nothing.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(nothing.address() as AddressInfo).port}/sse`;
    const gateway = await startGatewayCli(['--listen', '127.0.0.1:0', '--', url], {
      env: { IDEM_DATA_DIR: freshDir('sse-gw') },
    });
    processes.push(gateway);
    // The upstream is reached when a session starts: the initialize fails, and the log says why.
    await expect(clientOf(gateway.url)).rejects.toThrow();
    await vi.waitFor(() => {
      const said = gateway.stderr();
      expect(said).toContain(url);
      expect(said).toMatch(/Streamable HTTP \(POST\) answered HTTP 404/);
      expect(said).toMatch(/HTTP\+SSE \(GET, the 2024-11-05 transport\) failed/);
    }, PATIENTLY);
  });
});
