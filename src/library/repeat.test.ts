import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { idemCodeOf } from '../executions/answers.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { serveStreamableHttp } from './http.js';
import { Idem, insideOf } from './idem.js';

/**
 * The library's side of issue 9: a tool registered with neither annotations
 * nor a contract gets the cautious default; its replay says so, and the
 * status tool's `action: "repeat"` runs the handler again.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function clockServer() {
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-lib-repeat-'));
  const idem = await Idem.open({ dataDir, store: new MemoryStore(), maintenanceIntervalMs: 0 });
  const runs = { count: 0 };
  const newServer = () => {
    const server = new McpServer({ name: 'clock', version: '1.0.0' });
    idem.tool(server, 'read_clock', { inputSchema: { zone: z.string() } }, async ({ zone }) => {
      runs.count++;
      return {
        content: [{ type: 'text', text: `tick ${runs.count} in ${zone}` }],
        structuredContent: { tick: runs.count, zone },
      };
    });
    return server;
  };
  const http = await serveStreamableHttp(idem, newServer);
  cleanups.push(async () => {
    await http.close();
    await idem.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const connect = async (name: string) => {
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    cleanups.push(() => client.close());
    return client;
  };
  return { idem, client: await connect('lib-agent'), connect, runs };
}

const text = (result: CallToolResult, at: number) => {
  const item = result.content.at(at);
  return item?.type === 'text' ? item.text : '';
};

describe('Idem library: replays that say so, and a deliberate repeat', () => {
  it('publishes idempotentHint: false for a tool that does not say it is idempotent (the one rule in contracts/annotations.ts)', async () => {
    const { client } = await clockServer();
    const { tools } = await client.listTools();
    // A deliberate repeat runs it again: whether that has an effect is the tool's to say, and it says nothing.
    expect(tools.find((t) => t.name === 'read_clock')?.annotations).toMatchObject({
      idempotentHint: false,
      readOnlyHint: false,
    });
  });

  it("keeps a tool's own idempotentHint: true with or without a contract, after_completion: new included", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-lib-hints-'));
    const idem = await Idem.open({ dataDir, store: new MemoryStore(), maintenanceIntervalMs: 0 });
    const server = new McpServer({ name: 'hints', version: '1.0.0' });
    const own = { idempotentHint: true, destructiveHint: true };
    idem.tool(server, 'set_flag', { inputSchema: {}, annotations: own }, async () => ({ content: [] }));
    idem.tool(
      server,
      'set_flag_again',
      { inputSchema: {}, annotations: own, contract: { replay: 'keyed', after_completion: 'new' } },
      async () => ({ content: [] }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const client = new Client({ name: 'hints-agent', version: '1.0.0' });
    await client.connect(clientSide);
    cleanups.push(async () => {
      await client.close();
      await idem.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const { tools } = await client.listTools();
    for (const name of ['set_flag', 'set_flag_again'])
      expect(tools.find((t) => t.name === name)?.annotations, name).toEqual({ ...own, readOnlyHint: false });
  });

  it('a replay says so, first to the session that already had it (structuredContent untouched); action "repeat" runs the handler again as a new execution', async () => {
    const { idem, client, connect, runs } = await clockServer();
    const params = { name: 'read_clock', arguments: { zone: 'UTC' } };
    const first = (await client.callTool(params)) as CallToolResult;
    const again = (await client.callTool(params)) as CallToolResult;
    const ref = first._meta?.['io.idem/execution-id'] as string;
    expect(runs.count).toBe(1);
    expect(again.structuredContent).toEqual({ tick: 1, zone: 'UTC' });
    expect(text(again, -1)).toBe('tick 1 in UTC');
    expect(text(again, 0)).toContain(`{"ref":"${ref}","action":"repeat"}`);
    expect(again._meta).toMatchObject({ 'io.idem/replayed': true, 'io.idem/execution-id': ref });

    const repeat = { name: 'idem_execution_status', arguments: { ref, action: 'repeat' } };
    const fresh = (await client.callTool(repeat)) as CallToolResult;
    expect(fresh.structuredContent).toEqual({ tick: 2, zone: 'UTC' });
    expect(fresh._meta?.['io.idem/repeat-of']).toBe(ref);
    expect(await insideOf(idem).runtime.store.list({ tool: 'read_clock' })).toHaveLength(2);

    // Sent again: the repeat's own result, not a third run.
    const resent = (await client.callTool(repeat)) as CallToolResult;
    expect(resent.structuredContent).toEqual({ tick: 2, zone: 'UTC' });
    expect(runs.count).toBe(2);

    // A plain status lookup still answers with the stored result; another actor cannot repeat it.
    const status = (await client.callTool({
      name: 'idem_execution_status',
      arguments: { ref },
    })) as CallToolResult;
    expect(status.structuredContent).toEqual({ tick: 1, zone: 'UTC' });
    const stranger = await connect('another-agent');
    expect(idemCodeOf((await stranger.callTool(repeat)) as CallToolResult)).toBe('IDEM_UNKNOWN_EXECUTION');
    expect(runs.count).toBe(2);
  });
});
