/**
 * The PostgreSQL store's cost per call, measured sequentially (one call at a
 * time, so each figure is latency, not throughput):
 *
 *   0. one round trip to the server (`store.now()`), the unit the rest is made of;
 *   1. claim + complete: what the engine writes per call — the claim straight
 *      into `dispatched` with its 3 journal events, then `completed` with the
 *      result, delivery and 2 events;
 *   2. the claim alone (its input made beforehand), timed call by call in turn with a one-row
 *      INSERT committed on its own — a round trip and one WAL flush, the target's floor — and the
 *      same INSERT not waiting for the flush, which leaves the flush's own cost;
 *   3. bytes per execution row, result payload excluded, as PostgreSQL counts them;
 *   4. the database's work per call: transactions committed and WAL bytes written
 *      (pg_stat_database, pg_current_wal_lsn), what a fleet's database must absorb;
 *   5. growth: the claim's p50 on a table of 10⁴ and of 10⁶ existing executions
 *      (seeded with generate_series), in alternating rounds (`benchPostgresGrowth`).
 *
 * `benchPostgresStore(url, calls)` works in a schema of its own, dropped at
 * the end. Standalone (`npx tsx bench/postgres-store.ts`) it uses IDEM_PG_URL,
 * or else starts a throwaway server (durable: fsync and synchronous_commit on).
 * BENCH_GROWTH=1 adds the growth series, BENCH_VERIFY_ENTRIES=N the verify scan of N entries
 * (bench/postgres-verify.ts; BENCH_VERIFY_FORMAT=events|rows|events,rows, the default: which row format),
 * BENCH_ONLY=1 leaves out the latency series, BENCH_PG_FSYNC=off starts the throwaway server without fsync.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { monotonicFactory } from 'ulid';
import type { ActivityEventInput } from '../src/journal/events.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import type { ClaimInput } from '../src/store/types.js';
import { PG_URL_VARIABLE, startThrowawayPostgres } from '../test/support/postgres.js';
import { benchPostgresVerify, type VerifyFormat } from './postgres-verify.js';
import { judge } from './targets.js';

const nextUlid = monotonicFactory();

function callInput(n: number): ClaimInput {
  const i = Math.abs(n);
  return {
    id: `exe_${nextUlid()}`,
    fingerprint: `fp_${randomBytes(32).toString('base64url')}`,
    actor: `token:agent-${i % 50}`,
    tool: ['github.create_issue', 'payments.charge', 'mail.send'][i % 3]!,
    session: randomUUID(),
    replay: 'keyed',
    state: 'dispatched',
    dispatchTimeoutMs: 600_000,
    attachWindowMs: 900_000,
    claimToken: randomUUID(),
    leaseOwner: `gw-${i % 4}.prod:31337:a1b2c3`,
    leaseMs: 30_000,
    argumentsPreview: JSON.stringify({ order_id: `order-${i}`, amount_cents: 1999, currency: 'EUR' }),
  };
}

function claimEvents(input: ClaimInput): ActivityEventInput[] {
  const base = { executionId: input.id, actor: input.actor, tool: input.tool };
  return [
    { kind: 'received', ...base, requestRef: `req:${input.id}`, detail: { preview: input.argumentsPreview } },
    { kind: 'accepted', ...base },
    { kind: 'dispatched', ...base },
  ];
}

async function claimAndComplete(store: PostgresStore, i: number): Promise<void> {
  const input = callInput(i);
  const claim = await store.claim(input, { events: claimEvents(input) });
  if (!claim.won) throw new Error('a fresh fingerprint lost its claim');
  await complete(store, input, i);
}

/** The holder's outcome write: completed, with its result, delivery and 2 events. */
async function complete(store: PostgresStore, input: ClaimInput, i: number): Promise<void> {
  const done = await store.transition({
    id: input.id,
    from: ['dispatched', 'unknown'],
    to: 'completed',
    token: input.claimToken,
    holder: null,
    outcome: { result: { content: [{ type: 'text', text: `charged order-${i}` }] } },
    delivered: true,
    events: [
      {
        kind: 'outcome',
        executionId: input.id,
        actor: input.actor,
        tool: input.tool,
        detail: { state: 'completed' },
      },
      { kind: 'delivered', executionId: input.id, actor: input.actor, tool: input.tool },
    ],
  });
  if (!done) throw new Error('the claimer could not complete its execution');
}

async function claimPrepared(store: PostgresStore, input: ClaimInput): Promise<void> {
  if (!(await store.claim(input, { events: claimEvents(input) })).won) throw new Error('claim lost');
}

/**
 * The inputs of a series made before it starts: a claim's timing then holds the claim alone,
 * not the test's random ids and tokens (an engine makes those before it claims, too).
 */
function preparedInputs(calls: number, warmup: number): (i: number) => ClaimInput {
  const inputs = Array.from({ length: calls }, (_, i) => callInput(i));
  const warm = Array.from({ length: warmup }, (_, i) => callInput(-1 - i));
  return (i) => (i >= 0 ? inputs[i]! : warm[-1 - i]!);
}

/** Claims untimed, then times the outcome write alone (the sample `measure` keeps). */
async function outcomeOnly(store: PostgresStore, i: number): Promise<number> {
  const input = callInput(i);
  if (!(await store.claim(input, { events: claimEvents(input) })).won) throw new Error('claim lost');
  const start = process.hrtime.bigint();
  await complete(store, input, i);
  return Number(process.hrtime.bigint() - start) / 1000;
}

interface Stats {
  p50: number;
  p99: number;
  mean: number;
}

/** Times each call of `fn` in µs, or keeps the µs it returns (a call that times only part of itself). */
async function measure(calls: number, warmup: number, fn: (i: number) => Promise<unknown>): Promise<Stats> {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const samples = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const start = process.hrtime.bigint();
    const own = await fn(i);
    samples[i] = typeof own === 'number' ? own : Number(process.hrtime.bigint() - start) / 1000;
  }
  samples.sort();
  const at = (q: number) => samples[Math.min(calls - 1, Math.floor(q * calls))]!;
  return { p50: at(0.5), p99: at(0.99), mean: samples.reduce((a, b) => a + b, 0) / calls };
}

/** Several series measured call by call in turn, so that what the machine does meanwhile weighs on all alike. */
async function measureInTurn(
  calls: number,
  warmup: number,
  series: ((i: number) => Promise<unknown>)[],
): Promise<Stats[]> {
  const samples = series.map(() => new Float64Array(calls));
  await measure(calls, warmup, async (i) => {
    for (const [k, fn] of series.entries()) {
      const start = process.hrtime.bigint();
      await fn(i);
      if (i >= 0) samples[k]![i] = Number(process.hrtime.bigint() - start) / 1000;
    }
  });
  return samples.map((values) => {
    const sorted = values.sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    return { p50: at(0.5), p99: at(0.99), mean: sorted.reduce((x, y) => x + y, 0) / sorted.length };
  });
}

/** Markdown lines: a header line, a latency table (µs), and the bytes per row. */
export async function benchPostgresStore(url: string, calls: number): Promise<string[]> {
  const schema = `idem_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const store = await PostgresStore.open({ url, schema });
  try {
    const settings = await admin.query<{ version: string; fsync: string; sync: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
        current_setting('synchronous_commit') AS sync`,
    );
    const { version, fsync, sync } = settings.rows[0]!;
    const warmup = Math.min(500, Math.ceil(calls / 10));
    const roundTrip = await measure(calls, warmup, async () => {
      await store.now();
    });
    // The full series on stores of their own, closed before each reading: a server backend reports
    // its statistics (commits, WAL syncs) when it ends, so the counts between the readings are whole.
    const onItsOwnStore = async <T>(work: (own: PostgresStore) => Promise<T>): Promise<T> => {
      const own = await PostgresStore.open({ url, schema });
      try {
        return await work(own);
      } finally {
        await own.close();
      }
    };
    await onItsOwnStore((own) => measure(warmup, 0, (i) => claimAndComplete(own, -1 - i)));
    const before = await databaseWork(admin);
    const full = await onItsOwnStore((own) => measure(calls, 0, (i) => claimAndComplete(own, i)));
    const work = perCall(before, await databaseWork(admin), calls);
    const bytes = await store.measureRowBytes();
    // What one commit costs the server by itself: a round trip and one WAL flush, the least a
    // durable claim can cost. The claim's target is this + 0.1 ms, measured in the same run. The
    // same INSERT on a connection that does not wait for the flush, in turn with both, gives the
    // flush's own cost.
    await admin.query(`CREATE TABLE ${schema}.flush_probe (id bigserial PRIMARY KEY, k text NOT NULL)`);
    const lazy = new pg.Client({ connectionString: url, options: '-c synchronous_commit=off' });
    await lazy.connect();
    const probe = (client: pg.Client, i: number) =>
      client.query({
        name: 'flush_probe',
        text: `INSERT INTO ${schema}.flush_probe (k) VALUES ($1)`,
        values: [String(i)],
      });
    const input = preparedInputs(calls, warmup);
    const [claims, flush, noFlush] = (await measureInTurn(calls, warmup, [
      (i) => claimPrepared(store, input(i)),
      (i) => probe(admin, i),
      (i) => probe(lazy, i),
    ]).finally(() => lazy.end())) as [Stats, Stats, Stats];
    const outcomes = await measure(calls, warmup, (i) => outcomeOnly(store, i));
    const fmt = (n: number) => n.toFixed(0);
    const row = (label: string, s: Stats) => `| ${label} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.mean)} |`;
    judge(
      'PostgreSQL claim ≤ one commit (a round trip and one WAL flush) + 0.1 ms',
      `+${fmt(claims.p50 - flush.p50)} µs over the commit; its flush ${fmt(flush.p50 - noFlush.p50)} µs`,
      claims.p50 - flush.p50 <= 100,
    );
    return [
      `PostgreSQL ${version} (fsync=${fsync}, synchronous_commit=${sync}), node ${process.version}, ` +
        `one connection at a time from a pool, statements of a transaction pipelined; ` +
        `${calls} sequential calls per series (+${warmup} warm-up)`,
      '',
      '| series | p50 µs | p99 µs | mean µs |',
      '| --- | ---: | ---: | ---: |',
      row('one round trip: `store.now()` (baseline)', roundTrip),
      row('claim → dispatched (3 events) + complete with delivery (2 events)', full),
      row('one-row INSERT committed on its own (one round trip + one WAL flush)', flush),
      row('the same INSERT, not waiting for the flush (synchronous_commit off)', noFlush),
      row('claim → dispatched (3 events) alone, its input made beforehand', claims),
      row('outcome alone: complete with delivery (2 events), after an untimed claim', outcomes),
      '',
      `The claim over one commit's cost (round trip + WAL flush), same run: +${fmt(claims.p50 - flush.p50)} µs at p50 ` +
        `(${(claims.p50 / flush.p50).toFixed(2)}×; target ≤ +100 µs: ${claims.p50 - flush.p50 <= 100 ? 'met' : 'missed'}). ` +
        `The flush itself, same run: ${fmt(flush.p50 - noFlush.p50)} µs at p50 (the INSERT waiting for it, less the INSERT that does not).`,
      '',
      `Database work per call (claim + complete, 5 journal events): ${work.commits.toFixed(2)} transactions, ` +
        `${fmt(work.walBytes)} B of WAL (pg_current_wal_lsn; full-page images included), ` +
        `${work.walSyncs === undefined ? 'WAL syncs not counted (pg_stat_wal needs PostgreSQL 14)' : `${work.walSyncs.toFixed(2)} WAL syncs (pg_stat_wal, the WAL writer's included)`}, 2 statements.`,
      '',
      `PostgreSQL bytes per execution row, result payload excluded (${bytes.rows} completed rows): ` +
        `${fmt(bytes.heapBytesPerRow)} B on the table's pages (pg_relation_size of a copy without the outcome column, ` +
        `per row; avg pg_column_size ${fmt(bytes.columnBytesPerRow)} B) + ${fmt(bytes.indexBytesPerRow)} B in its 3 indexes ` +
        `(freshly built; ${fmt(bytes.liveIndexBytesPerRow)} B as left by the writes). ` +
        `The live table, outcomes and not yet vacuumed row versions included: ${fmt(bytes.liveTableBytesPerRow)} B per row.`,
    ];
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

interface DatabaseWork {
  lsn: string;
  commits: number;
  /** Times the WAL was synced to disk, server-wide; undefined before PostgreSQL 14 (no pg_stat_wal). */
  walSyncs: number | undefined;
}

/** Where the WAL is, how many transactions the database committed and how often the WAL was synced, so far. */
async function databaseWork(admin: pg.Client): Promise<DatabaseWork> {
  const { rows } = await admin.query<{ lsn: string; commits: string; wal_view: string | null }>(
    `SELECT pg_current_wal_lsn()::text AS lsn, xact_commit::text AS commits,
       to_regclass('pg_catalog.pg_stat_wal')::text AS wal_view
     FROM pg_stat_database WHERE datname = current_database()`,
  );
  const syncs =
    rows[0]!.wal_view === null
      ? undefined
      : Number(
          (await admin.query<{ syncs: string }>('SELECT wal_sync::text AS syncs FROM pg_stat_wal')).rows[0]!
            .syncs,
        );
  return { lsn: rows[0]!.lsn, commits: Number(rows[0]!.commits), walSyncs: syncs };
}

function perCall(before: DatabaseWork, after: DatabaseWork, calls: number) {
  const lsn = (text: string) => {
    const [hi, lo] = text.split('/').map((h) => BigInt(`0x${h}`));
    return (hi! << 32n) + lo!;
  };
  return {
    walBytes: Number(lsn(after.lsn) - lsn(before.lsn)) / calls,
    // Includes this reader's own statements: an upper bound.
    commits: (after.commits - before.commits) / calls,
    walSyncs:
      after.walSyncs === undefined || before.walSyncs === undefined
        ? undefined
        : (after.walSyncs - before.walSyncs) / calls,
  };
}

/**
 * The claim's p50 with 10⁴ and with 10⁶ executions already in the table (each
 * in a schema of its own, seeded with generate_series: completed, still
 * active, spread fingerprints, ids below the new ones), in alternating
 * rounds so that the machine's load falls on both alike.
 */
export async function benchPostgresGrowth(
  url: string,
  calls: number,
  sizes = [10_000, 1_000_000],
): Promise<string[]> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const opened: { size: number; schema: string; store: PostgresStore; samples: number[] }[] = [];
  try {
    for (const size of sizes) {
      const schema = `idem_growth_${randomBytes(4).toString('hex')}`;
      const store = await PostgresStore.open({ url, schema });
      opened.push({ size, schema, store, samples: [] });
      await admin.query(`
        INSERT INTO ${schema}.executions (created_at, updated_at, attach_until, state, replay, active, id,
          fingerprint, actor, tool, arguments_preview, outcome)
        SELECT 1764547200000 + i, 1764547200000 + i, 1764547200000 + i + 900000, 'completed', 'keyed', true,
          'exe_00' || lpad(i::text, 24, '0'), sha256(int8send(i)), 'token:agent-' || (i % 50),
          'payments.charge', '{"order_id":"order-' || i || '","amount_cents":1999}',
          '{"result":{"content":[{"type":"text","text":"charged"}]}}'
        FROM generate_series(1, ${size}) AS i`);
      await admin.query(`VACUUM ANALYZE ${schema}.executions`);
    }
    // Many short rounds: the machine's load swings within seconds, and each round's p50 feels it.
    const rounds = 10;
    const perRound = Math.ceil(calls / rounds);
    for (let round = 0; round < rounds; round++) {
      for (const o of opened) {
        const warm = Math.min(200, perRound);
        const input = preparedInputs(perRound, warm);
        const stats = await measure(perRound, warm, (i) => claimPrepared(o.store, input(i)));
        o.samples.push(stats.p50);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const base = median(opened[0]!.samples);
    return [
      `Claim → dispatched (3 events), ${rounds} alternating rounds of ${perRound} sequential calls; p50 per round, µs:`,
      '',
      '| existing executions | p50 per round µs | median | vs the smallest |',
      '| ---: | --- | ---: | ---: |',
      ...opened.map(
        (o) =>
          `| ${o.size.toLocaleString('en-US')} | ${o.samples.map((x) => x.toFixed(0)).join(', ')} | ${median(o.samples).toFixed(0)} | ${((median(o.samples) / base - 1) * 100).toFixed(1)} % |`,
      ),
    ];
  } finally {
    for (const o of opened) {
      await o.store.close();
      await admin.query(`DROP SCHEMA IF EXISTS ${o.schema} CASCADE`).catch(() => {});
    }
    await admin.end();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const calls = Number(process.env.BENCH_CALLS ?? 5_000);
  const given = process.env[PG_URL_VARIABLE];
  // BENCH_PG_FSYNC=off separates round trips and server work from the disk's flushes.
  const server = given
    ? undefined
    : await startThrowawayPostgres({ durable: process.env.BENCH_PG_FSYNC !== 'off' });
  try {
    const url = given ?? server!.url;
    if (!process.env.BENCH_ONLY) for (const line of await benchPostgresStore(url, calls)) console.log(line);
    if (process.env.BENCH_GROWTH) for (const line of await benchPostgresGrowth(url, calls)) console.log(line);
    if (process.env.BENCH_VERIFY_ENTRIES) {
      const formats = (process.env.BENCH_VERIFY_FORMAT ?? 'events,rows').split(',') as VerifyFormat[];
      for (const format of formats)
        for (const line of await benchPostgresVerify(url, Number(process.env.BENCH_VERIFY_ENTRIES), format))
          console.log(line);
    }
  } finally {
    await server?.dispose();
  }
}
