/**
 * The HTTP action channel's per-call cost: the same POST sent directly with
 * undici (keep-alive pool, Idempotency-Key and Authorization set by hand) and
 * as an HTTP action tool through the execution engine on SQLite (identify →
 * claim → credential → SSRF check and pinned connection → request → outcome →
 * delivery). The target is a trivial loopback server in this process; calls
 * alternate between the series, so all see the same machine state. Two
 * diagnostic series show where Idem's time goes: the channel alone (templates,
 * URL and address checks, pinned pool, outcome; no engine), and the whole
 * tool with the engine on a memory store (no SQLite).
 *
 *   npx tsx bench/http-tool.ts      # BENCH_CALLS calls per series (default 5,000)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { resolveContract } from '../src/contracts/contract.js';
import { Credentials } from '../src/credentials/index.js';
import { actionCall } from '../src/dispatch/action-call.js';
import { httpActionTool } from '../src/dispatch/http/index.js';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { KnownSecrets } from '../src/identity/redaction.js';
import { MemoryStore } from '../src/store/memory/memory-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { median, SyncProbe } from './disk-sync.js';
import { judge } from './targets.js';

const KEY = 'sk_bench_0123456789abcdef';

function percentile(sorted: Float64Array, q: number): number {
  return (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number) / 1e6;
}

export async function benchHttpTool(calls: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-bench-http-'));
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{"charge_id":"ch_1"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/charges`;
  // The durable default (synchronous=FULL: the claim is on disk before the request is sent), and the
  // documented trade for speed (NORMAL: safe against a process crash, not a power cut).
  const store = await SqliteStore.open({ path: join(dir, 'http.db') });
  const fastStore = await SqliteStore.open({ path: join(dir, 'http-normal.db'), synchronous: 'normal' });
  const secrets = new KnownSecrets();
  const credentials = Credentials.fromConfig({ pay: { env: 'PAY' } }, secrets, { env: { PAY: KEY } });
  const tool = httpActionTool(
    'charge',
    {
      description: 'bench',
      method: 'POST',
      url,
      body: { order_id: '{order_id}', amount_cents: '{amount_cents}' },
      credential: { name: 'pay', scheme: 'bearer' },
      allow: { addresses: ['127.0.0.1'] },
      contract: { replay: 'keyed', scope: { business_key: 'order_id' } },
    },
    { credentials },
  );
  const fingerprinter = new Fingerprinter(randomBytes(32));
  const engine = new ExecutionEngine({ store, fingerprinter, knownSecrets: secrets });
  const fastEngine = new ExecutionEngine({ store: fastStore, fingerprinter, knownSecrets: secrets });
  const memoryEngine = new ExecutionEngine({
    store: new MemoryStore(),
    fingerprinter,
    knownSecrets: secrets,
  });
  const contract = resolveContract(tool.contract, undefined);
  const caller = { actor: 'local:bench', session: 'bench' };
  const direct = new Agent();

  const through = (on: ExecutionEngine, prefix: string) => async (i: number) => {
    const { call, dispatch } = actionCall(
      'charge',
      tool.channel,
      contract,
      { order_id: `${prefix}-${i}`, amount_cents: 100 },
      caller,
    );
    const result = await on.execute(call, dispatch);
    if (result.isError) throw new Error(`bench call failed: ${JSON.stringify(result.content)}`);
  };
  const viaIdem = through(engine, 'o');
  const viaFast = through(fastEngine, 'n');
  const viaMemory = through(memoryEngine, 'm');
  const viaChannel = async (i: number) => {
    const result = await tool.channel.dispatch(
      { order_id: `c-${i}`, amount_cents: 100 },
      { executionId: `exe_bench_${i}`, redispatch: false },
    );
    if (result.isError) throw new Error(`bench call failed: ${JSON.stringify(result.content)}`);
  };
  const viaUndici = async (i: number) => {
    const response = await request(url, {
      method: 'POST',
      dispatcher: direct,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${KEY}`,
        'idempotency-key': `key-${i}`,
      },
      body: JSON.stringify({ order_id: `d-${i}`, amount_cents: 100 }),
    });
    await response.body.text();
  };

  const warmup = Math.min(500, Math.floor(calls / 10));
  const series = [viaUndici, viaIdem, viaFast, viaChannel, viaMemory];
  for (let i = 0; i < warmup; i++) for (const send of series) await send(-1 - i);
  const samples = series.map(() => new Float64Array(calls));
  for (let i = 0; i < calls; i++) {
    for (const [k, send] of series.entries()) {
      const start = process.hrtime.bigint();
      await send(i);
      (samples[k] as Float64Array)[i] = Number(process.hrtime.bigint() - start);
    }
  }
  await tool.channel.close();
  await direct.close();
  await store.close();
  await fastStore.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // One sync at the durable series' pace (the other four series' calls between two of its own),
  // on the disk under its store: what the durable target allows over the `normal` one.
  const probe = new SyncProbe(dir);
  const others = [0, 2, 3, 4].reduce(
    (sum, k) => sum + percentile((samples[k] as Float64Array).slice().sort(), 0.5),
    0,
  );
  const sync = median(await probe.timeSyncs(100, Math.max(1, Math.round(others))));
  probe.close();
  rmSync(dir, { recursive: true, force: true });

  const expected = series.length * (calls + warmup);
  if (requests !== expected) throw new Error(`the target counted ${requests} requests, expected ${expected}`);
  const [u, d, n, c, m] = samples.map((s) => s.sort()) as [
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
  ];
  const row = (label: string, s: Float64Array) =>
    `| ${label} | ${percentile(s, 0.5).toFixed(3)} | ${percentile(s, 0.99).toFixed(3)} |`;
  const added = (s: Float64Array) => percentile(s, 0.5) - percentile(u, 0.5);
  judge(
    'HTTP action tool ≤ +0.3 ms over undici (synchronous: normal)',
    `+${added(n).toFixed(3)} ms`,
    added(n) <= 0.3,
  );
  judge(
    'HTTP action tool ≤ +0.3 ms + one sync over undici (durable default)',
    `+${added(d).toFixed(3)} ms; one sync here ${(sync / 1000).toFixed(3)} ms`,
    added(d) <= 0.3 + sync / 1000,
  );
  return [
    `${calls} calls per series, alternating; the target counted ${requests} requests.`,
    '',
    '| series | p50 ms | p99 ms |',
    '| --- | ---: | ---: |',
    row('POST sent directly with undici (keep-alive pool)', u),
    row('the same POST as an HTTP action tool (engine, SQLite, durable default: synchronous=FULL)', d),
    row('the same, SQLite with synchronous=NORMAL (the documented trade for speed)', n),
    row('diagnostic: the HTTP channel alone (no engine, no store)', c),
    row('diagnostic: the HTTP action tool, engine on a memory store', m),
    '',
    `Idem adds ${(percentile(d, 0.5) - percentile(u, 0.5)).toFixed(3)} ms at p50 with the durable default (ratio ${(percentile(d, 0.5) / percentile(u, 0.5)).toFixed(2)}×), ` +
      `${(percentile(n, 0.5) - percentile(u, 0.5)).toFixed(3)} ms with synchronous=NORMAL (ratio ${(percentile(n, 0.5) / percentile(u, 0.5)).toFixed(2)}×).`,
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const line of await benchHttpTool(Number(process.env.BENCH_CALLS ?? 5_000))) console.log(line);
}
