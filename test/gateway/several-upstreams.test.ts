import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { fixtureStdioCommand } from '../conformance/harness.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { executionsOf } from './fixtures/counting-server.js';

/** Two upstreams behind one gateway: names prefixed, every call routed to its own upstream. */
describe('idem gateway with several upstreams', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-several-'));
  const counts = join(dir, 'counts');
  mkdirSync(counts);
  let gateway: Gateway;
  let client: Client;

  beforeAll(async () => {
    const running = await startHttpGateway({
      upstreams: { counter: countingUpstream(counts), fixture: fixtureStdioCommand() },
      tools: { counter__count: { replay: 'keyed', scope: { business_key: 'key' } } },
    });
    gateway = running.gateway;
    client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(running.url)));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists every upstream's tools as <upstream>__<tool>, valid for every client ([A-Za-z0-9_-]{1,64}), plus the status tool", async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('counter__count');
    expect(names).toContain('fixture__test_simple_text');
    expect(names).toContain('idem_execution_status');
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(client.getServerVersion()?.name).toBe('idem-gateway');
  });

  it('routes calls, prompts and resources to their upstream; a contract applies by the prefixed name', async () => {
    const counted = (await client.callTool({
      name: 'counter__count',
      arguments: { key: 'k1' },
    })) as CallToolResult;
    expect(counted.structuredContent).toMatchObject({ key: 'k1', value: 1 });
    const again = (await client.callTool({
      name: 'counter__count',
      arguments: { key: 'k1' },
    })) as CallToolResult;
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(executionsOf(counts, 'k1')).toBe(1);
    const text = (await client.callTool({
      name: 'fixture__test_simple_text',
      arguments: {},
    })) as CallToolResult;
    expect(text.isError).toBeFalsy();
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(prompts.length).toBeGreaterThan(0);
    const resources = await client.listResources();
    expect(resources.resources.length).toBeGreaterThan(0);
    const first = resources.resources[0] as { uri: string };
    expect((await client.readResource({ uri: first.uri })).contents.length).toBeGreaterThan(0);
  });
});
