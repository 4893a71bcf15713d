import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { idemCodeOf } from '../../src/executions/answers.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { removeTemporaries } from '../support/temp-dirs.js';

/**
 * A Streamable HTTP upstream whose connection breaks after the request
 * arrived may have acted: `unknown`, never "not executed". One that cannot be
 * reached at all did nothing: IDEM_NOT_EXECUTED.
 */
const effects: string[] = [];
let current: ServerResponse | undefined;
let upstream: Server;
let gateway: RunningGateway | undefined;
let client: Client | undefined;

afterAll(async () => {
  await client?.close().catch(() => {});
  await gateway?.close();
  await new Promise<void>((resolve) => upstream?.close(() => resolve()));
  removeTemporaries();
});

/** A stateless MCP server over HTTP (official SDK) whose `act` records its effect, then breaks the connection. */
function startUpstream(): Promise<string> {
  upstream = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const server = new McpServer({ name: 'breaking-http', version: '1.0.0' });
    server.registerTool(
      'act',
      { description: 'Acts, then the connection breaks', inputSchema: { key: z.string() } },
      async ({ key }) => {
        effects.push(key);
        current?.socket?.destroy();
        return { content: [{ type: 'text', text: `did ${key}` }] };
      },
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    current = res;
    await transport.handleRequest(req, res);
  });
  return new Promise((resolve) =>
    upstream.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`),
    ),
  );
}

describe('a Streamable HTTP upstream that fails', () => {
  it('after the request arrived: unknown; while it cannot be reached: IDEM_NOT_EXECUTED', async () => {
    gateway = await startHttpGateway({
      upstreams: { remote: { url: await startUpstream() } },
      tools: { act: { replay: 'status', scope: { business_key: 'key' } } },
    });
    client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const act = (key: string) =>
      client?.callTool({ name: 'act', arguments: { key } }) as Promise<CallToolResult>;

    const broken = await act('broken');
    expect(effects).toEqual(['broken']);
    expect(idemCodeOf(broken)).toBe('IDEM_OUTCOME_UNKNOWN');

    await new Promise<void>((resolve) => {
      upstream.close(() => resolve());
      upstream.closeAllConnections();
    });
    expect(idemCodeOf(await act('unreachable'))).toBe('IDEM_NOT_EXECUTED');
    expect(effects).toEqual(['broken']);
  }, 60_000);
});
