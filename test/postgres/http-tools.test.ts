/**
 * Two gateways on one PostgreSQL database, each offering the same HTTP action
 * tool: concurrent identical calls through both reach the payment processor
 * once (counted on the far side), and every caller ends up with that one
 * execution's answer.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PaymentProcessor } from '../../src/demo/processor.js';
import { idemCodeOf, META } from '../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { chargeHttpTool } from '../support/charge-tool.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { fleetMemberConfig } from '../support/postgres-fleet.js';

const work = mkdtempSync(join(tmpdir(), 'idem-pg-http-'));
let pg: TestPostgres;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  pg = await postgresForTests();
}, 120_000);
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await pg?.dispose();
  rmSync(work, { recursive: true, force: true });
});

describe('HTTP action tools on several gateways sharing PostgreSQL', () => {
  it('concurrent identical calls through two gateways: one request at the processor', {
    timeout: 120_000,
  }, async () => {
    const processor = new PaymentProcessor();
    let release!: () => void;
    processor.hold = new Promise((resolve) => (release = resolve));
    const base = await processor.start();
    cleanups.push(async () => {
      release();
      await processor.stop();
    });
    const keyFile = join(work, 'pay.key');
    writeFileSync(keyFile, 'sk_test_pg_0123456789');
    chmodSync(keyFile, 0o600);
    const clients: Client[] = [];
    for (const name of ['a', 'b']) {
      mkdirSync(join(work, `counts-${name}`), { recursive: true });
      const member = fleetMemberConfig(
        { work, name, url: pg.url, store: { pool: { max: 4, connection_timeout: '60s' } } },
        {
          listen: { http: { host: '127.0.0.1', port: 0 } },
          upstreams: { counter: countingUpstream(join(work, `counts-${name}`)) },
          credentials: { pay: { file: keyFile } },
          http_tools: { charge: chargeHttpTool(base, { replay: 'keyed', lease: '30s' }) },
          sweep_interval: '1h',
        },
      );
      const config = GatewayConfigSchema.parse(member);
      const gateway = await Gateway.start(config, { version: 'test', upstreamStderr: 'ignore' });
      const { url } = await gateway.serveHttp();
      cleanups.push(() => gateway.close());
      for (let i = 0; i < 3; i++) {
        const client = new Client({ name: 'fleet-agent', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(url)));
        cleanups.push(() => client.close());
        clients.push(client);
      }
    }
    const args = { order_id: 'PG-1', amount_cents: 777 };
    const call = (client: Client) =>
      client.callTool({ name: 'charge', arguments: args }) as Promise<CallToolResult>;
    const pending = clients.map(call);
    // The processor holds the one request until release: every other caller has answered by
    // then. Released earlier, a caller that a loaded machine had not yet let reach its gateway
    // would find the execution completed and replay its result — a second answer without error.
    let answered = 0;
    const count = () => answered++;
    for (const p of pending) void p.then(count, count);
    await expect.poll(() => processor.requests, { timeout: 60_000 }).toBe(1);
    await expect.poll(() => answered, { timeout: 60_000 }).toBe(clients.length - 1);
    release();
    const answers = await Promise.all(pending);
    const ref = processor.keys[0];
    for (const answer of answers) {
      expect(
        answer._meta?.[META.executionId] ??
          (answer.structuredContent as { idem?: { ref: string } }).idem?.ref,
      ).toBe(ref);
      expect(['IDEM_IN_FLIGHT', undefined]).toContain(idemCodeOf(answer));
    }
    expect(answers.filter((a) => !a.isError)).toHaveLength(1);
    // Afterwards, through either gateway, the stored result: still one request.
    for (const client of [clients[0], clients[5]] as Client[]) {
      const again = await call(client);
      expect(again._meta?.[META.replayed]).toBe(true);
    }
    expect(processor.requests).toBe(1);
    expect(processor.charges).toBe(1);
  });
});
