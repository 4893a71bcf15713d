import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { RawMcpHttp } from '../support/raw-mcp-http.js';
import { executionsOf } from './fixtures/counting-server.js';

/** The stateless HTTP front: no sessions, every POST stands alone (the 2026-07-28 style). */
describe('idem gateway, stateless Streamable HTTP front', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-stateless-'));
  const counts = join(dir, 'counts');
  mkdirSync(counts);
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    const running = await startHttpGateway({
      http: { stateless: true },
      upstreams: { counter: countingUpstream(counts) },
      tools: { count: { replay: 'keyed', scope: { business_key: 'key' } } },
    });
    gateway = running.gateway;
    url = running.url;
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the official SDK client works without a session: list, call, and a repeat gets the stored result', async () => {
    const client = new Client({ name: 'stateless-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['count', 'idem_execution_status', 'read_count']);
    const first = (await client.callTool({ name: 'count', arguments: { key: 'sl-1' } })) as CallToolResult;
    expect(first.isError).toBeFalsy();
    const again = (await client.callTool({ name: 'count', arguments: { key: 'sl-1' } })) as CallToolResult;
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(executionsOf(counts, 'sl-1')).toBe(1);
    await client.close();
  });

  it('ids have no session scope: the same message resent is answered from its receipt; a reused id with other arguments is a new request', async () => {
    const raw = new RawMcpHttp(url);
    const a = await raw.callTool(1, 'count', { key: 'sl-2' });
    const resent = await raw.callTool(1, 'count', { key: 'sl-2' });
    expect(resent.result).toEqual(a.result);
    const reused = await raw.callTool(1, 'count', { key: 'sl-3' });
    expect(reused.error).toBeUndefined();
    expect(idemCodeOf(reused.result as CallToolResult)).toBeUndefined();
    expect(executionsOf(counts, 'sl-2')).toBe(1);
    expect(executionsOf(counts, 'sl-3')).toBe(1);
    const journal = await gateway.store.readJournal(0, 10_000);
    expect(journal.some((e) => e.kind === 'id_reused')).toBe(true);
  });
});
