import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { executionsOf, finishedOf } from './fixtures/counting-server.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-cancel-'));
const counts = join(dir, 'counts');
mkdirSync(counts);
let gateway: Gateway | undefined;
afterAll(async () => {
  writeFileSync(join(counts, 'hold-c'), '');
  await gateway?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a client that cancels after dispatch (docs/protocol.md)', () => {
  it('makes the outcome unknown, not failed, and passes the cancellation on to the upstream', async () => {
    const running = await startHttpGateway({
      upstreams: { counter: countingUpstream(counts) },
      tools: { count: { replay: 'status', scope: { business_key: 'key' } } },
    });
    gateway = running.gateway;
    const url = running.url;
    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const controller = new AbortController();
    const cancelled = client.callTool(
      { name: 'count', arguments: { key: 'c-1', hold_file: 'hold-c' } },
      undefined,
      { signal: controller.signal },
    );
    // Cancelled after dispatch: once the upstream has performed the effect.
    await vi.waitFor(() => expect(executionsOf(counts, 'c-1')).toBe(1), { timeout: 20_000, interval: 25 });
    controller.abort('the user changed their mind');
    await expect(cancelled).rejects.toThrow();
    const store = gateway.store;
    const record = await vi.waitFor(
      async () => {
        const [found] = await store.list({ tool: 'count' });
        expect(found?.state).toBe('unknown');
        return found!;
      },
      { timeout: 10_000, interval: 20 },
    );
    const retry = (await client.callTool({
      name: 'count',
      arguments: { key: 'c-1', hold_file: 'hold-c' },
    })) as CallToolResult;
    expect(idemCodeOf(retry)).toBe('IDEM_OUTCOME_UNKNOWN');
    // The upstream's handler finishes anyway, but (as the spec says) answers nothing to a
    // cancelled request: the gateway cannot know, so it stays unknown — never "failed".
    writeFileSync(join(counts, 'hold-c'), '');
    await vi.waitFor(() => expect(finishedOf(counts, 'c-1')).toBe(1), { timeout: 20_000, interval: 20 });
    // A call behind it on the same upstream connection: whatever the upstream sent for the cancelled
    // request (nothing, per the spec) has reached the gateway before this answer.
    const behind = await client.callTool({ name: 'read_count', arguments: { key: 'c-1' } });
    expect(behind.structuredContent).toMatchObject({ value: 1 });
    expect((await gateway.store.get(record.id))?.state).toBe('unknown');
    expect(executionsOf(counts, 'c-1')).toBe(1);
    await client.close();
  }, 60_000);
});
