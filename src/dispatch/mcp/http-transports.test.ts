import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpUpstreamTransport, speaksStreamableHttp } from './http-transports.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((done) => server.close(done));
});

/** A server that answers every POST with `status`, and counts the GETs (an SSE client's first step). */
async function refusing(status: number): Promise<{ url: URL; gets: () => number }> {
  let gets = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') gets++;
    res.writeHead(req.method === 'POST' ? status : 404, { 'content-type': 'text/plain' }).end('refused');
  });
  servers.push(server);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), gets: () => gets };
}

const discover = { jsonrpc: '2.0' as const, id: 1, method: 'server/discover', params: {} };

describe('an HTTP upstream found out (transport: auto)', () => {
  it('a Streamable server refusing the handshake with 400 is that server’s answer: no SSE GET, still Streamable', async () => {
    const target = await refusing(400);
    const transport = httpUpstreamTransport({ url: target.url, fetch }, 'auto');
    await transport.start();
    await expect(transport.send(discover)).rejects.toBeInstanceOf(StreamableHTTPError);
    expect(target.gets()).toBe(0);
    expect(speaksStreamableHttp(transport)).toBe(true);
    await transport.close();
  });

  it.each([404, 405])(
    'no POST there (%i): the SSE GET is tried, and its failure names both attempts',
    async (status) => {
      const target = await refusing(status);
      const transport = httpUpstreamTransport({ url: target.url, fetch }, 'auto');
      await transport.start();
      await expect(transport.send(discover)).rejects.toThrow(
        new RegExp(
          `speaks neither MCP HTTP transport: Streamable HTTP \\(POST\\) answered HTTP ${status}.*HTTP\\+SSE \\(GET`,
        ),
      );
      expect(target.gets()).toBe(1);
      await transport.close();
    },
  );
});
