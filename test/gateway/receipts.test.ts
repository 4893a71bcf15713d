import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { fixtureStdioCommand } from '../conformance/harness.js';
import { RawMcpHttp } from '../support/raw-mcp-http.js';

/** Receipts at the gateway: only calls with effects get them; reads pass straight through (docs/lifecycle.md, step 2). */
describe('gateway receipts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-gw-receipts-'));
  let gateway: Gateway;
  let raw: RawMcpHttp;

  beforeAll(async () => {
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: dir,
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { fixture: fixtureStdioCommand() },
        // increment_counter has an effect; declaring it read-only here makes "no receipt" observable.
        tools: { increment_counter: { replay: 'read_only' } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    raw = new RawMcpHttp((await gateway.serveHttp()).url);
    await raw.initialize();
    await raw.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a read-only call resent with the same id runs again (no receipt); a call with effects resent is answered from its receipt', async () => {
    const value = (reply: Record<string, unknown>) =>
      (reply.result as { structuredContent: { value: number } }).structuredContent.value;
    expect(value(await raw.callTool(1, 'increment_counter', { key: 'ro' }))).toBe(1);
    expect(value(await raw.callTool(1, 'increment_counter', { key: 'ro' }))).toBe(2);
    const journal = await gateway.store.readJournal(0, 1000);
    expect(journal.some((e) => e.kind === 'receipt_hit')).toBe(false);

    await raw.callTool(2, 'test_simple_text', {});
    await raw.callTool(2, 'test_simple_text', {});
    expect((await gateway.store.readJournal(0, 1000)).filter((e) => e.kind === 'receipt_hit')).toHaveLength(
      1,
    );
    // The resend never reached the engine: the receipt layer's own counter has it, and only it.
    const answers = await gateway.metrics.registry?.getSingleMetric('idem_receipt_answers_total')?.get();
    expect(answers?.values).toEqual([{ labels: { answer: 'resend' }, value: 1 }]);
  });
});
