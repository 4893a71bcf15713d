import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { openTestIdem } from '../../test/support/library-idem.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('Idem library: the caller it journals', () => {
  it('records the OAuth token a call came with (issuer, jti) on the execution journal, as the gateway does', async () => {
    const { idem, store } = await openTestIdem(cleanups, 'idem-caller-');
    const server = new McpServer({ name: 'test', version: '1.0.0' });
    let runs = 0;
    idem.tool(
      server,
      'charge',
      { inputSchema: { order_id: z.string() }, contract: { replay: 'keyed' } },
      async () => {
        runs++;
        return { content: [{ type: 'text', text: 'charged' }] };
      },
    );
    const [client, served] = InMemoryTransport.createLinkedPair();
    const replies: JSONRPCMessage[] = [];
    client.onmessage = (message) => replies.push(message);
    await idem.connect(server, served);
    await client.start();
    const answered = (id: number) =>
      vi.waitFor(() => expect(replies.some((r) => 'id' in r && r.id === id)).toBe(true));

    // The token a front verified rides on the transport, beside the message (as over Streamable HTTP).
    const authInfo: AuthInfo = {
      token: 'opaque',
      clientId: 'client-1',
      scopes: [],
      extra: { issuer: 'https://as.example', jti: 'jti-1', sub: 'alice' },
    };
    await client.send(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      },
      { authInfo },
    );
    await answered(1);
    await client.send({ jsonrpc: '2.0', method: 'notifications/initialized' }, { authInfo });
    await client.send(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'charge', arguments: { order_id: 'o-1' } },
      },
      { authInfo },
    );
    await answered(2);

    expect(runs).toBe(1);
    const [execution] = await store.list();
    const received = (await store.journalFor(execution!.id)).find((e) => e.kind === 'received');
    expect(received?.detail.token).toEqual({ issuer: 'https://as.example', jti: 'jti-1' });
  });
});
