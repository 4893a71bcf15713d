import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTestIdem } from '../../test/support/library-idem.js';
import type { ToolContract } from '../contracts/contract.js';

/**
 * The library with `scope: { business_key }`: the key names the action
 * (docs/contracts.md). Each client connects under its own name, which is its actor
 * on a transport without auth.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function chargeLibrary(contract: ToolContract) {
  const { idem, store } = await openTestIdem(cleanups, 'idem-lib-key-');
  const charged: { order_id: string; amount_cents: number }[] = [];

  /** One client (its name is its actor) on its own server instance, over a linked in-memory pair. */
  const client = async (name: string) => {
    const server = new McpServer({ name: 'shop', version: '1.0.0' });
    idem.tool(
      server,
      'charge',
      {
        inputSchema: {
          order_id: z.string(),
          amount_cents: z.number().int(),
          card_number: z.string().meta({ writeOnly: true }),
          trace: z.string().optional(),
        },
        contract,
      },
      async (args) => {
        charged.push({ order_id: args.order_id, amount_cents: args.amount_cents });
        return {
          content: [{ type: 'text', text: `charged ${args.order_id}: ${args.amount_cents}` }],
          structuredContent: { charge: charged.length },
        };
      },
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const c = new Client({ name, version: '1.0.0' });
    await c.connect(clientSide);
    cleanups.push(() => c.close());
    return (args: Record<string, unknown>) =>
      c.callTool({ name: 'charge', arguments: args }) as Promise<CallToolResult>;
  };
  return { client, charged, store };
}

const order = { order_id: 'B1', amount_cents: 1000, card_number: '4242424242424242' };
const idem = (r: CallToolResult) =>
  (r.structuredContent as { idem?: { code: string; ref: string; state: string } } | undefined)?.idem;
const refOf = (r: CallToolResult) => r._meta?.['io.idem/execution-id'];

describe('Idem library: a business key names the action', () => {
  it('variations of the amount, the card or an extra field under one order id: charged once, the rest IDEM_KEY_CONFLICT', async () => {
    const { client, charged, store } = await chargeLibrary({
      replay: 'keyed',
      scope: { business_key: 'order_id' },
    });
    const charge = await client('agent');
    const first = await charge(order);
    expect(first.isError).toBeFalsy();

    for (const args of [
      { ...order, amount_cents: 9900 },
      { ...order, card_number: '5555555555554444' },
      { ...order, trace: 'retry-7' },
    ]) {
      const answer = await charge(args);
      expect(answer.isError).toBe(true);
      expect(idem(answer)).toMatchObject({
        code: 'IDEM_KEY_CONFLICT',
        ref: refOf(first),
        state: 'completed',
      });
    }
    const again = await charge(order);
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(charged).toEqual([{ order_id: 'B1', amount_cents: 1000 }]);

    // The card number (a writeOnly secret) is compared by keyed digest and stored nowhere.
    const stored = JSON.stringify([await store.list(), await store.readJournal()]);
    expect(stored).not.toContain('4242424242424242');
    expect(stored).not.toContain('5555555555554444');
  });

  it('a field the contract declares not meaningful is the same request: the stored replay, not a conflict', async () => {
    const { client, charged } = await chargeLibrary({
      replay: 'keyed',
      scope: { business_key: 'order_id' },
      fingerprint: { ignore: ['trace'] },
    });
    const charge = await client('agent');
    const first = await charge({ ...order, trace: 'run-1' });
    const retried = await charge({ ...order, trace: 'run-2' });
    expect(retried.isError).toBeFalsy();
    expect(retried._meta?.['io.idem/replayed']).toBe(true);
    expect(refOf(retried)).toBe(refOf(first));
    expect(charged).toHaveLength(1);
  });

  it('per actor (default): two clients charging one order id charge twice', async () => {
    const { client, charged } = await chargeLibrary({ replay: 'keyed', scope: { business_key: 'order_id' } });
    const a = await (await client('agent-a'))(order);
    const b = await (await client('agent-b'))(order);
    expect(a.isError).toBeFalsy();
    expect(b.isError).toBeFalsy();
    expect(charged).toHaveLength(2);
  });

  it("shared: the second client's call gets the first's ref and state, and nothing is charged again", async () => {
    const { client, charged } = await chargeLibrary({
      replay: 'keyed',
      scope: { business_key: 'order_id', shared: true },
    });
    const a = await (await client('agent-a'))(order);
    const chargeB = await client('agent-b');
    for (const args of [order, { ...order, amount_cents: 1 }]) {
      const b = await chargeB(args);
      expect(b.isError).toBe(true);
      expect(idem(b)).toMatchObject({ code: 'IDEM_KEY_CONFLICT', ref: refOf(a), state: 'completed' });
      expect(JSON.stringify(b)).not.toContain('charged B1');
    }
    expect(charged).toHaveLength(1);
  });
});
