/**
 * `idem audit verify`'s scan of a PostgreSQL journal (bench/postgres-store.ts runs it with
 * BENCH_VERIFY_ENTRIES=N): N events written straight into a database of their own, a valid
 * chain shaped like a real run's, then read back in pages by seq and verified, as the CLI does
 * for one stream. Two row formats: `events`, one event a row (what PostgreSQL wrote before
 * migration 8: chain 0, seqs 1, 2, 3, …); `rows`, a transaction's events a row (docs/adr/0053),
 * in the engine's shape — the claim's 3 events, then the outcome's 2 — on a writer's chain,
 * each row's seqs the block of 8 a nextval gives it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  buildEntry,
  chainGenesis,
  GENESIS_HASH,
  journalRowHash,
  rowEventsText,
} from '../src/journal/chain.js';
import type { ActivityEventInput } from '../src/journal/events.js';
import { postgresJournalRows, postgresRegistry } from '../src/journal/sources.js';
import { verifyJournal } from '../src/journal/verify.js';
import { JOURNAL_SEQ_BLOCK } from '../src/store/postgres/journal-rows.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';

export type VerifyFormat = 'events' | 'rows';

const KINDS: ActivityEventInput['kind'][] = ['received', 'accepted', 'dispatched', 'outcome', 'delivered'];
const AT = 1_764_547_200_000;

/** The n-th event of the run (from 1): five a call, as the engine journals one. */
function event(n: number): ActivityEventInput {
  return {
    kind: KINDS[(n - 1) % 5]!,
    executionId: `exe_01KBENCH${String(Math.floor((n - 1) / 5)).padStart(17, '0')}`,
    actor: 'token:agent-7',
    tool: 'payments.charge',
    requestRef: `["token:agent-7","s:1","${n}"]`,
    detail: n % 5 === 4 ? { state: 'completed' } : {},
  };
}

export async function benchPostgresVerify(
  url: string,
  entries: number,
  format: VerifyFormat,
): Promise<string[]> {
  const name = `idem_verify_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  try {
    const store = await PostgresStore.open({ url: dbUrl.href });
    await store.close();
    const db = new pg.Client({ connectionString: dbUrl.href });
    await db.connect();
    const rows = format === 'events' ? await writeEvents(db, entries) : await writeRows(db, entries);
    await db.query('VACUUM ANALYZE activity_journal');
    await db.end();
    // The floor under verify: the same pages read and turned into rows, nothing hashed.
    let read = 0;
    const readStarted = performance.now();
    for await (const _ of postgresJournalRows(dbUrl.href, 'activity')) read++;
    const readSeconds = (performance.now() - readStarted) / 1000;
    const registry = await postgresRegistry(dbUrl.href, 'activity');
    const started = performance.now();
    const report = await verifyJournal(postgresJournalRows(dbUrl.href, 'activity'), {
      stream: 'activity',
      registry,
    });
    const seconds = (performance.now() - started) / 1000;
    if (!report.ok || report.entries !== entries || read !== rows)
      throw new Error(
        `verify failed (${read} of ${rows} rows read): ${JSON.stringify(report.firstBad ?? report)}`,
      );
    const perSecond = (n: number, s: number) => Math.round(n / s).toLocaleString('en-US');
    const shape =
      format === 'events'
        ? `${entries.toLocaleString('en-US')} entries, one a row`
        : `${entries.toLocaleString('en-US')} entries in ${rows.toLocaleString('en-US')} rows of 3 then 2 (ADR 0053)`;
    return [
      `audit verify of a PostgreSQL journal, ${shape} (pages of 20,000 by seq, one connection): ` +
        `${seconds.toFixed(2)} s, ${perSecond(entries, seconds)} entries/s; ` +
        `reading the same rows alone, nothing hashed: ${perSecond(read, readSeconds)} rows/s`,
    ];
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

/** One event a row, chain 0 (the format before migration 8). Returns the rows written. */
async function writeEvents(db: pg.Client, entries: number): Promise<number> {
  let prev = GENESIS_HASH;
  for (let from = 1; from <= entries; from += 5_000) {
    const cols: unknown[][] = Array.from({ length: 9 }, () => []);
    for (let seq = from; seq < Math.min(entries + 1, from + 5_000); seq++) {
      const { entry, detailText } = buildEntry(event(seq), seq, AT + seq, prev);
      prev = entry.hash;
      const values = [
        seq,
        entry.at,
        entry.kind,
        entry.executionId,
        entry.actor,
        entry.tool,
        entry.requestRef,
      ];
      for (const [i, v] of values.entries()) cols[i]!.push(v);
      cols[7]!.push(detailText);
      cols[8]!.push(`${entry.prevHash} ${entry.hash}`);
    }
    await db.query(
      `INSERT INTO activity_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash, chain)
       SELECT s, a, k, e, ac, t, r, d, split_part(h, ' ', 1), split_part(h, ' ', 2), 0
       FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
         $9::text[]) AS u(s, a, k, e, ac, t, r, d, h)`,
      cols,
    );
  }
  return entries;
}

/**
 * Rows of 3 then 2 events on chain 1, registered with its end as journal_append_rows leaves it;
 * the i-th row takes the i-th block of seqs. Returns the rows written.
 */
async function writeRows(db: pg.Client, entries: number): Promise<number> {
  const genesis = chainGenesis('activity', 1);
  let prev = genesis;
  let n = 1;
  let rows = 0;
  let last = { seq: 0, at: 0 };
  while (n <= entries) {
    const cols: unknown[][] = Array.from({ length: 5 }, () => []);
    for (let i = 0; i < 5_000 && n <= entries; i++) {
      const size = Math.min(rows % 2 === 0 ? 3 : 2, entries - n + 1);
      const events = Array.from({ length: size }, (_, k) => event(n + k));
      const text = rowEventsText(events);
      const seq = rows * JOURNAL_SEQ_BLOCK + size;
      const at = AT + n;
      const hash = journalRowHash(prev, seq, at, size, text);
      for (const [c, v] of [seq, at, size, text, `${prev} ${hash}`].entries()) cols[c]!.push(v);
      prev = hash;
      last = { seq, at };
      n += size;
      rows++;
    }
    await db.query(
      `INSERT INTO activity_journal (seq, at, kind, detail, prev_hash, hash, chain, events)
       SELECT s, a, '', d, split_part(h, ' ', 1), split_part(h, ' ', 2), 1, n
       FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[], $5::text[]) AS u(s, a, n, d, h)`,
      cols,
    );
  }
  await db.query(
    `INSERT INTO journal_head (stream, chain, seq, hash, at) VALUES ('activity', 1, $1, $2, $3)`,
    [last.seq, prev, last.at],
  );
  return rows;
}
