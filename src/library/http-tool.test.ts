import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PaymentProcessor } from '../demo/processor.js';
import { idemCodeOf, META } from '../executions/answers.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { Idem } from './idem.js';

const SECRET = 'sk_lib_0123456789abcdef';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `idem.httpTool` on an SDK server, a client over an in-memory transport, the processor on loopback. */
async function setup() {
  const processor = new PaymentProcessor();
  const base = await processor.start();
  cleanups.push(() => processor.stop());
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-lib-http-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  process.env.IDEM_TEST_LIB_PAY_KEY = SECRET;
  cleanups.push(() => {
    delete process.env.IDEM_TEST_LIB_PAY_KEY;
  });
  const idem = await Idem.open({
    dataDir,
    store: new MemoryStore(),
    maintenanceIntervalMs: 0,
    credentials: { pay: { env: 'IDEM_TEST_LIB_PAY_KEY' } },
  });
  cleanups.push(() => idem.close());
  const server = new McpServer({ name: 'payments', version: '1.0.0' });
  idem.httpTool(server, 'charge', {
    description: 'Charge an order once.',
    inputSchema: { order_id: z.string(), amount_cents: z.number().int() },
    contract: { replay: 'keyed', scope: { business_key: 'order_id' } },
    http: {
      method: 'POST',
      url: `${base}/charges`,
      body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
      credential: { name: 'pay', scheme: 'header', header: 'X-Api-Key' },
      allow: { addresses: ['127.0.0.1'] },
    },
  });
  idem.httpTool(server, 'charge_tagged', {
    description: 'Charge an order once, tagged.',
    inputSchema: { order_id: z.string(), amount_cents: z.number().int(), tag: z.string().optional() },
    contract: { replay: 'keyed', scope: { business_key: 'order_id' } },
    http: {
      method: 'POST',
      url: `${base}/charges`,
      headers: { 'X-Tag': '{tag}' },
      body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
      allow: { addresses: ['127.0.0.1'] },
    },
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await idem.connect(server, serverSide);
  const client = new Client({ name: 'lib-agent', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(() => client.close());
  return { client, processor, base };
}

describe('idem.httpTool (the HTTP channel in a library server)', () => {
  it('runs one request per intent, sends the credential by name and the execution id as the key', async () => {
    const { client, processor, base } = await setup();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['idem_execution_status', 'charge', 'charge_tagged']);
    const args = { order_id: 'L-1', amount_cents: 990 };
    const answers = (await Promise.all([
      client.callTool({ name: 'charge', arguments: args }),
      client.callTool({ name: 'charge', arguments: args }),
    ])) as CallToolResult[];
    expect(processor.requests).toBe(1);
    expect(processor.headers[0]?.['x-api-key']).toBe(SECRET);
    const ref = processor.keys[0] as string;
    for (const answer of answers) {
      expect(answer._meta?.[META.executionId]).toBe(ref);
      expect(['IDEM_IN_FLIGHT', undefined]).toContain(idemCodeOf(answer));
    }
    const status = (await client.callTool({
      name: 'idem_execution_status',
      arguments: { ref },
    })) as CallToolResult;
    expect(status.structuredContent).toMatchObject({ status: 201, body: { order_id: 'L-1' } });
    expect(status._meta?.[META.action]).toEqual({ channel: 'http', target: base, credential: 'pay' });
    expect(JSON.stringify([answers, status, tools])).not.toContain(SECRET);
  });

  it('refuses an argument a header template needs and the call lacks with IDEM_INVALID_INPUT, claiming and sending nothing', async () => {
    const { client, processor } = await setup();
    const args = { order_id: 'L-T', amount_cents: 10 };
    const refused = (await client.callTool({ name: 'charge_tagged', arguments: args })) as CallToolResult;
    expect(idemCodeOf(refused)).toBe('IDEM_INVALID_INPUT');
    expect(refused._meta?.[META.executionId]).toBeUndefined();
    expect(processor.requests).toBe(0);
    const sent = (await client.callTool({
      name: 'charge_tagged',
      arguments: { ...args, tag: 'blue' },
    })) as CallToolResult;
    expect(sent.isError).toBeFalsy();
    expect(processor.headers[0]?.['x-tag']).toBe('blue');
  });
});
