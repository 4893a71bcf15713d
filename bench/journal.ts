/**
 * Journal benchmarks: offline verify speed on a journal of N entries (events; SQLite
 * file, as `idem audit verify --db` reads it), and the journal's added cost
 * per call (the engine on SQLite with and without journal rows, same run).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { resolveContract } from '../src/contracts/contract.js';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { buildEntry, buildRow, GENESIS_HASH } from '../src/journal/chain.js';
import type { ActivityEventInput } from '../src/journal/events.js';
import { sqliteJournalRows } from '../src/journal/sources.js';
import { verifyJournal } from '../src/journal/verify.js';
import { verifySqliteJournal } from '../src/journal/verify-parallel.js';
import type { ToolResult } from '../src/store/outcome.js';
import { JOURNAL_COLUMNS, journalColumnValues, journalRowValues } from '../src/store/sqlite/sql.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { ExecutionStore } from '../src/store/types.js';
import { judge } from './targets.js';

const KINDS: ActivityEventInput['kind'][] = ['received', 'accepted', 'dispatched', 'outcome', 'delivered'];

/**
 * The journal's format: `rows` is one row per transaction (docs/adr/0052) in a real call's shape —
 * the claim's row (received, accepted, dispatched) then the outcome's (outcome, delivered);
 * `events` the format before it, one row per event.
 */
export type BenchJournalFormat = 'rows' | 'events';
/** A call's events split into its transactions' rows, in the `rows` format. */
const CALL_ROWS = [3, 2];

/** The `seq`th event (from 1) of a journal shaped like a real run's: five events per call. */
function benchEvent(seq: number): ActivityEventInput {
  const kind = KINDS[(seq - 1) % 5] as ActivityEventInput['kind'];
  return {
    kind,
    executionId: `exe_01KBENCH${String(Math.floor((seq - 1) / 5)).padStart(17, '0')}`,
    actor: 'token:agent-7',
    tool: 'charge_card',
    requestRef: `["token:agent-7","s:3f2b9c1e","${seq}"]`,
    detail:
      kind === 'received'
        ? { preview: `{"order_id":"o-${seq}","amount_cents":1999}` }
        : kind === 'outcome'
          ? { state: 'completed' }
          : {},
  };
}

/**
 * Writes a journal of `entries` events shaped like a real run's into a fresh SQLite store file,
 * in `format` (default: one row per transaction, as the store writes it).
 */
export async function buildJournalFile(
  dir: string,
  entries: number,
  format: BenchJournalFormat = 'rows',
): Promise<string> {
  const path = join(dir, `journal-${format}.db`);
  const store = await SqliteStore.open({ path });
  await store.close();
  const db = new Database(path);
  db.pragma('synchronous = OFF');
  const insert = db.prepare(
    `INSERT INTO activity_journal (${JOURNAL_COLUMNS.join(', ')}) VALUES (${JOURNAL_COLUMNS.map(() => '?').join(', ')})`,
  );
  let rows = 0;
  const batch = db.transaction((from: number, to: number, prev: string) => {
    for (let seq = from; seq <= to; ) {
      const at = 1_764_000_000_000 + seq;
      if (format === 'events') {
        const { entry, detailText } = buildEntry(benchEvent(seq), seq, at, prev);
        insert.run(journalColumnValues(entry, detailText));
        prev = entry.hash;
        seq++;
        continue;
      }
      const size = Math.min(CALL_ROWS[rows++ % CALL_ROWS.length] as number, to - seq + 1);
      const events = Array.from({ length: size }, (_, i) => benchEvent(seq + i));
      const row = buildRow(events, seq - 1, at, prev);
      insert.run(journalRowValues(row));
      prev = row.hash;
      seq += size;
    }
    return prev;
  });
  let prev = GENESIS_HASH;
  // Batches end on a call's end, so rows keep the call's shape.
  for (let from = 1; from <= entries; from += 50_000)
    prev = batch(from, Math.min(entries, from + 49_999), prev);
  db.close();
  return path;
}

export async function benchVerify(entries: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-bench-journal-'));
  try {
    const lines: string[] = [];
    for (const format of ['rows', 'events'] as const) {
      const path = await buildJournalFile(dir, entries, format);
      const db = new Database(path, { readonly: true });
      const rows = db.prepare('SELECT COUNT(*) FROM activity_journal').pluck().get() as number;
      db.close();
      const shape =
        format === 'rows'
          ? `one row per transaction (${rows.toLocaleString('en')} rows)`
          : 'one row per event (the format before ADR 0052)';
      for (const [label, run] of [
        ['sequential scan', () => verifyJournal(sqliteJournalRows(path))],
        [
          '`idem audit verify --db` (rowid chunks on every core)',
          () => verifySqliteJournal(path, 'activity'),
        ],
      ] as const) {
        const start = process.hrtime.bigint();
        const report = await run();
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        if (!report.ok || report.entries !== entries)
          throw new Error(`verify failed on the bench journal: ${JSON.stringify(report)}`);
        lines.push(
          `| audit verify, ${label}, SQLite file, ${entries.toLocaleString('en')} entries, ${shape} | ${seconds.toFixed(2)} s | ${Math.round(entries / seconds).toLocaleString('en')} entries/s |`,
        );
        if (label !== 'sequential scan' && format === 'rows')
          judge(
            'journal verify ≥ 1,000,000 entries/s (SQLite, every core)',
            `${Math.round(entries / seconds).toLocaleString('en')} entries/s over ${entries.toLocaleString('en')}`,
            entries / seconds >= 1_000_000,
          );
      }
      rmSync(path, { force: true });
    }
    return lines;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The same store with journal rows dropped: the baseline for the journal's cost. */
function withoutJournal(store: ExecutionStore): ExecutionStore {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property === 'claim')
        return (input: unknown, options?: { replacing?: string }) =>
          target.claim(input as never, { ...(options?.replacing ? { replacing: options.replacing } : {}) });
      if (property === 'transition')
        return (t: { events?: unknown }) => target.transition({ ...(t as object), events: [] } as never);
      if (property === 'markDelivered') return (id: string) => target.markDelivered(id);
      if (property === 'appendEvents') return async () => {};
      return value.bind(target);
    },
  });
}

export async function benchJournalCost(calls: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-bench-jcost-'));
  try {
    const fingerprinter = new Fingerprinter(randomBytes(32));
    const contract = resolveContract({ replay: 'keyed', scope: { business_key: 'order_id' } }, undefined);
    const handler = async (): Promise<ToolResult> => ({ content: [{ type: 'text', text: 'ok' }] });
    const measure = async (store: ExecutionStore, tag: string) => {
      const engine = new ExecutionEngine({ store, fingerprinter });
      const samples: number[] = [];
      for (let i = -Math.floor(calls / 10); i < calls; i++) {
        const start = process.hrtime.bigint();
        await engine.execute(
          {
            tool: 'charge_card',
            channel: 'library',
            target: 'local',
            credentialRef: null,
            method: 'tools/call',
            arguments: { order_id: `${tag}-${i}` },
            contract,
            caller: { actor: 'a', session: 's' },
          },
          handler,
        );
        if (i >= 0) samples.push(Number(process.hrtime.bigint() - start) / 1000);
      }
      samples.sort((a, b) => a - b);
      return samples[samples.length >> 1] as number;
    };
    const plain = await SqliteStore.open({ path: join(dir, 'plain.db') });
    const journaled = await SqliteStore.open({ path: join(dir, 'journaled.db') });
    const without = await measure(withoutJournal(plain), 'a');
    const withJournal = await measure(journaled, 'b');
    await plain.close();
    await journaled.close();
    return [
      `| journal's added cost per call (engine on SQLite, 5 events per call, one row per transaction), p50 | ${without.toFixed(1)} µs without → ${withJournal.toFixed(1)} µs with | +${(withJournal - without).toFixed(1)} µs (${(withJournal / without).toFixed(2)}×) |`,
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const entries = Number(process.env.BENCH_JOURNAL_ENTRIES ?? 1_000_000);
  console.log('| series | measured | result |\n| --- | ---: | ---: |');
  for (const line of await benchVerify(entries)) console.log(line);
  for (const line of await benchJournalCost(Number(process.env.BENCH_CALLS ?? 5_000))) console.log(line);
}
