import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Gate } from '../../test/support/gate.js';
import { RawMcpHttp } from '../../test/support/raw-mcp-http.js';
import { freshDir } from '../../test/support/temp-dirs.js';
import { PATIENTLY } from '../../test/support/wait.js';
import { idemCodeOf } from '../executions/answers.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { serveStreamableHttp } from './http.js';
import { Idem, type IdemOptions, insideOf } from './idem.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A server with one counting `charge` tool, served over real HTTP on loopback.
 * With a gate, the tool is slow until the test opens it.
 */
async function chargeServer(options: Partial<IdemOptions> & { gate?: Gate } = {}) {
  const { gate, ...idemOptions } = options;
  const dataDir = freshDir('lib');
  const idem = await Idem.open({ dataDir, store: new MemoryStore(), ...idemOptions });
  const counter = { invocations: 0, keys: [] as (string | null)[] };
  const newServer = () => {
    const server = new McpServer({ name: 'test', version: '1.0.0' });
    idem.tool(
      server,
      'charge',
      {
        inputSchema: {
          order_id: z.string(),
          amount_cents: z.number().int(),
          card_number: z.string().meta({ writeOnly: true }),
        },
        contract: { replay: 'keyed', scope: { business_key: 'order_id' } },
      },
      async (args, extra) => {
        counter.invocations++;
        counter.keys.push(extra.idem.executionId);
        await gate?.wait();
        return {
          content: [{ type: 'text', text: `charged ${args.order_id}` }],
          structuredContent: { n: counter.invocations },
        };
      },
    );
    return server;
  };
  const http = await serveStreamableHttp(idem, newServer);
  cleanups.push(async () => {
    await http.close();
    await idem.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { idem, http, counter, dataDir };
}

async function sdkClient(url: string, name = 'sdk-test-client'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  return client;
}

const args = { order_id: 'o-1', amount_cents: 500, card_number: '4000056655665556' };

describe('Idem library over real Streamable HTTP', () => {
  it('serves a 2026-07-28 client too (no session): discover, list, call; the call re-issued with a new id gets the stored result', async () => {
    const { http, counter } = await chargeServer();
    const client = new ClientV2(
      { name: 'v2-pinned', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new HttpV2(new URL(http.url)));
    cleanups.push(() => client.close());
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['charge', 'idem_execution_status']),
    );
    const first = (await client.callTool({ name: 'charge', arguments: args })) as CallToolResult;
    const again = (await client.callTool({ name: 'charge', arguments: args })) as CallToolResult;
    expect(first.content).toEqual([{ type: 'text', text: 'charged o-1' }]);
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(counter.invocations).toBe(1);
  });

  it('the same call twice concurrently (processor still working): one invocation, IDEM_IN_FLIGHT with the ref, then the stored result', async () => {
    const gate = new Gate();
    const { http, counter } = await chargeServer({ gate });
    const a = await sdkClient(http.url);
    const b = await sdkClient(http.url);
    const first = a.callTool({ name: 'charge', arguments: args }) as Promise<CallToolResult>;
    await gate.started;
    const second = (await b.callTool({ name: 'charge', arguments: args })) as CallToolResult;
    expect(idemCodeOf(second)).toBe('IDEM_IN_FLIGHT');
    gate.open();
    const ref = (second.structuredContent as { idem: { ref: string } }).idem.ref;
    const done = await first;
    expect(done._meta?.['io.idem/execution-id']).toBe(ref);
    const third = (await b.callTool({ name: 'charge', arguments: args })) as CallToolResult;
    expect(third.structuredContent).toEqual({ n: 1 });
    expect(third._meta?.['io.idem/replayed']).toBe(true);
    expect(counter.invocations).toBe(1);
    expect(counter.keys).toEqual([ref]);
  });

  it('the same request id re-sent in the same session waits for the first and gets its result', async () => {
    const gate = new Gate();
    const { idem, http, counter } = await chargeServer({ gate });
    const raw = new RawMcpHttp(http.url);
    await raw.initialize();
    const first = raw.callTool(5, 'charge', args);
    await gate.started;
    const second = raw.callTool(5, 'charge', args);
    // The re-send is answered from the receipt while the first still runs; only then may the first finish.
    await vi.waitFor(
      async () =>
        expect((await insideOf(idem).runtime.store.readJournal()).map((e) => e.kind)).toContain(
          'receipt_hit',
        ),
      PATIENTLY,
    );
    gate.open();
    const [r1, r2] = await Promise.all([first, second]);
    expect(counter.invocations).toBe(1);
    expect(r2.result).toEqual(r1.result);
    expect(r2.id).toBe(5);
    // After completion, the string "5" renders as the same id: the stored reply, under the id as sent.
    const r3 = await raw.callTool('5', 'charge', args);
    expect(r3.id).toBe('5');
    expect(r3.result).toEqual(r1.result);
    expect(counter.invocations).toBe(1);
  });

  it('a reused id with other content is refused with MCP_REQUEST_ID_REUSED and nothing runs', async () => {
    const { http, counter } = await chargeServer();
    const raw = new RawMcpHttp(http.url);
    await raw.initialize();
    await raw.callTool(9, 'charge', args);
    const reused = await raw.callTool(9, 'charge', { ...args, order_id: 'o-2' });
    expect(reused.error).toMatchObject({ code: -32600, data: { code: 'MCP_REQUEST_ID_REUSED' } });
    expect(counter.invocations).toBe(1);
    // The same id in another session is another request.
    const other = new RawMcpHttp(http.url);
    await other.initialize();
    const fresh = await other.callTool(9, 'charge', { ...args, order_id: 'o-2' });
    expect(fresh.result).toBeDefined();
    expect(counter.invocations).toBe(2);
  });

  it('at the receipt bound a new id gets IDEM_RECEIPTS_FULL and does not run', async () => {
    const gate = new Gate();
    const { http, counter } = await chargeServer({ gate, receipts: { maxReceipts: 1 } });
    const raw = new RawMcpHttp(http.url);
    await raw.initialize();
    const running = raw.callTool(1, 'charge', args);
    await gate.started;
    const refused = await raw.callTool(2, 'charge', { ...args, order_id: 'o-2' });
    expect(idemCodeOf(refused.result as CallToolResult)).toBe('IDEM_RECEIPTS_FULL');
    gate.open();
    await running;
    expect(counter.invocations).toBe(1);
  });

  it('tools/list has the status tool and annotations by the one rule (contracts/annotations.ts)', async () => {
    const { http } = await chargeServer();
    const client = await sdkClient(http.url);
    const { tools } = await client.listTools();
    const charge = tools.find((t) => t.name === 'charge');
    // charge says nothing of itself: a keyed contract does not make a deliberate repeat harmless.
    expect(charge?.annotations).toEqual({ idempotentHint: false, readOnlyHint: false });
    const status = tools.find((t) => t.name === 'idem_execution_status');
    // `action: "repeat"` runs an action again: the status tool is not read-only.
    expect(status?.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(status?.inputSchema.properties).toHaveProperty('action');
    expect(status?.inputSchema.properties).toHaveProperty('ref');
  });

  it('a secret argument never lands in the SQLite file, the journal, logs or result metadata', async () => {
    const dataDir = freshDir('secret');
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const logged: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      logged.push(String(chunk));
      return true;
    });
    cleanups.push(() => stderr.mockRestore());
    const idem = await Idem.open({ dataDir });
    const secret = '4000056655665556';
    // The slow charge outlives its 50 ms timeout: it finishes only when the test opens the gate.
    const slow = new Gate();
    const server = new McpServer({ name: 'secret-test', version: '1.0.0' });
    idem.tool(
      server,
      'charge',
      {
        inputSchema: {
          order_id: z.string(),
          card_number: z.string().meta({ writeOnly: true }),
          api_key: z.string(),
        },
        contract: { replay: 'review', fingerprint: { secrets: ['api_key'] }, timeout: 50 },
      },
      async (a) => {
        if (a.order_id === 'slow') await slow.wait();
        return { content: [{ type: 'text', text: `charged ${a.order_id}` }] };
      },
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const client = new Client({ name: 'c', version: '1' });
    await client.connect(clientSide);
    const results: unknown[] = [];
    for (const order of ['fast', 'slow', 'fast']) {
      results.push(
        await client.callTool({
          name: 'charge',
          arguments: { order_id: order, card_number: secret, api_key: 'sk_live_abcdef123456' },
        }),
      );
    }
    slow.open();
    // Its late outcome is recorded too, and must not carry the secrets either (waited on as a condition:
    // the late write lands later on a loaded machine, the default 1 s of vi.waitFor was a guess). Were a
    // fast call to outlive the 50 ms too, its late outcome would be recorded the same way.
    await vi.waitFor(
      async () =>
        expect((await insideOf(idem).runtime.store.list({ limit: 100 })).map((r) => r.state).sort()).toEqual([
          'completed',
          'completed',
        ]),
      PATIENTLY,
    );
    const journal = await insideOf(idem).runtime.store.readJournal(0, 10_000);
    const records = await insideOf(idem).runtime.store.list({ limit: 100 });
    await client.close();
    await idem.close();
    expect(records.length).toBe(2);
    const files = readdirSync(dataDir).filter((f) => f.startsWith('idem.db'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = readFileSync(join(dataDir, file));
      expect(bytes.includes(secret), file).toBe(false);
      expect(bytes.includes('sk_live_abcdef123456'), file).toBe(false);
    }
    for (const text of [
      JSON.stringify(journal),
      JSON.stringify(records),
      JSON.stringify(results),
      logged.join(''),
    ]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('sk_live_abcdef123456');
    }
  });

  it("a caller's own key in _meta (a gateway's execution id) names the action: same key, one execution; another key, another", async () => {
    const idem = await Idem.open({
      dataDir: freshDir('key'),
      store: new MemoryStore(),
    });
    cleanups.push(() => idem.close());
    let runs = 0;
    const server = new McpServer({ name: 'keyed', version: '1.0.0' });
    idem.tool(
      server,
      'ship',
      { inputSchema: { sku: z.string() }, contract: { replay: 'keyed' } },
      async () => {
        runs++;
        return { content: [{ type: 'text', text: `shipment ${runs}` }] };
      },
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const client = new Client({ name: 'gateway-like', version: '1' });
    await client.connect(clientSide);
    cleanups.push(() => client.close());
    const ship = (key: string) =>
      client.callTool({
        name: 'ship',
        arguments: { sku: 'A-1' },
        _meta: { 'io.idem/execution-id': key },
      }) as Promise<CallToolResult>;
    const first = await ship('exe_gateway_1');
    const resent = await ship('exe_gateway_1');
    expect(resent.content.slice(1)).toEqual(first.content);
    expect(resent._meta?.['io.idem/replayed']).toBe(true);
    const other = await ship('exe_gateway_2');
    expect(other._meta?.['io.idem/replayed']).toBeUndefined();
    expect(runs).toBe(2);
  });

  it('ids without session scope: a reused id with new content is a new request, journaled as id_reused', async () => {
    const idem = await Idem.open({
      dataDir: freshDir('nosess'),
      store: new MemoryStore(),
      idScope: 'none',
    });
    let runs = 0;
    const server = new McpServer({ name: 'stateless', version: '1.0.0' });
    idem.tool(
      server,
      'act',
      { inputSchema: { x: z.number() }, contract: { replay: 'keyed' } },
      async ({ x }) => {
        runs++;
        return { content: [{ type: 'text', text: `x=${x}` }] };
      },
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const replies: JSONRPCMessage[] = [];
    clientSide.onmessage = (m) => replies.push(m);
    await clientSide.start();
    const send = (m: unknown) => clientSide.send(m as JSONRPCMessage);
    await send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const answered = () => replies.filter((m) => 'id' in m && m.id === 1 && 'result' in m).length;
    await send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'act', arguments: { x: 1 } } });
    await vi.waitFor(() => expect(answered()).toBe(1), PATIENTLY);
    await send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'act', arguments: { x: 2 } } });
    await vi.waitFor(() => expect(answered()).toBe(2), PATIENTLY);
    expect(runs).toBe(2);
    const kinds = (await insideOf(idem).runtime.store.readJournal()).map((e) => e.kind);
    expect(kinds).toContain('id_reused');
    await clientSide.close();
    await idem.close();
  });
});
