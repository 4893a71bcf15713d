import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { idemCodeOf } from '../executions/answers.js';
import { Idem } from './idem.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An Idem with one `refund` tool that waits for a human on every call, and a client of it. */
async function refunds() {
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-approve-'));
  const idem = await Idem.open({ dataDir, store: { kind: 'memory' }, maintenanceIntervalMs: 0 });
  const server = new McpServer({ name: 'refunds', version: '1.0.0' });
  let runs = 0;
  idem.tool(
    server,
    'refund',
    { inputSchema: { order_id: z.string() }, contract: { replay: 'keyed', approval: 'every_call' } },
    async ({ order_id }) => {
      runs += 1;
      return { content: [{ type: 'text', text: `refunded ${order_id}` }] };
    },
  );
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await idem.connect(server, serverSide);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(async () => {
    await client.close();
    await idem.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const call = async (order_id: string) =>
    (await client.callTool({ name: 'refund', arguments: { order_id } })) as CallToolResult;
  const refOf = (answer: CallToolResult) => (answer.structuredContent as { idem: { ref: string } }).idem.ref;
  return { idem, call, refOf, runs: () => runs };
}

describe('Idem.approve and Idem.deny: a decision in code', () => {
  it('an approved execution runs on the next call of the same intent, once; a second decision does not stand', async () => {
    const { idem, call, refOf, runs } = await refunds();
    const waiting = await call('o-1');
    expect(idemCodeOf(waiting)).toBe('IDEM_AWAITING_APPROVAL');
    expect(await idem.approve(refOf(waiting), 'operator:bob')).toBe(true);
    expect(await idem.deny(refOf(waiting), 'operator:eve', 'too late')).toBe(false);
    const ran = await call('o-1');
    expect(ran.content.at(-1)).toEqual({ type: 'text', text: 'refunded o-1' });
    expect(runs()).toBe(1);
  });

  it('a denied one is answered IDEM_DENIED with the reason, and nothing runs', async () => {
    const { idem, call, refOf, runs } = await refunds();
    const waiting = await call('o-2');
    expect(await idem.deny(refOf(waiting), 'operator:bob', 'amount too large')).toBe(true);
    const denied = await call('o-2');
    expect(idemCodeOf(denied)).toBe('IDEM_DENIED');
    expect(JSON.stringify(denied.content)).toContain('amount too large');
    expect(runs()).toBe(0);
  });
});
