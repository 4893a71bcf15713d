import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Gate } from '../../test/support/gate.js';
import { openTestIdem } from '../../test/support/library-idem.js';
import { idemCodeOf } from '../executions/answers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('Idem.drain (a library server shutting down)', () => {
  it('refuses new calls as not executed, and resolves once the call under way is finished and recorded', async () => {
    const { idem, store } = await openTestIdem(cleanups, 'idem-drain-');
    const server = new McpServer({ name: 'test', version: '1.0.0' });
    const gate = new Gate();
    let runs = 0;
    idem.tool(server, 'charge', { inputSchema: { order_id: z.string() } }, async () => {
      runs++;
      await gate.wait();
      return { content: [{ type: 'text', text: 'charged' }] };
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const client = new Client({ name: 'drain-agent', version: '1.0.0' });
    await client.connect(clientSide);
    cleanups.push(() => client.close());
    const charge = (order_id: string) =>
      client.callTool({ name: 'charge', arguments: { order_id } }) as Promise<CallToolResult>;

    const first = charge('o-1');
    await gate.started;
    let drained: boolean | undefined;
    const draining = idem.drain().then((complete) => {
      drained = complete;
    });
    expect(idemCodeOf(await charge('o-2'))).toBe('IDEM_NOT_EXECUTED');
    expect(drained).toBeUndefined();
    gate.open();
    expect((await first).isError).toBeFalsy();
    await draining;
    expect(drained).toBe(true);
    expect((await store.list()).map((r) => r.state)).toEqual(['completed']);
    expect(runs).toBe(1);
  });
});
