import Database from 'better-sqlite3';
import type pg from 'pg';
import { postgresFingerprint, sqliteFingerprint } from '../identity/fingerprint-columns.js';
import { loadPg } from '../support/optional-packages.js';
import type { RowEvent } from './chain.js';
import type { JournalStream } from './events.js';
import { DETAIL_KINDS, type ExecutionEventRow, type StoredExecutionRow } from './executions-check.js';
import { storedOutcomeDigest } from './outcome-digest.js';
import type { RegisteredHead } from './verify-heads.js';
import type { StoredJournalRow } from './verify-report.js';

const TABLES: Record<JournalStream, string> = { activity: 'activity_journal', sessions: 'sessions_journal' };

/** A journal row as `SELECT ${COLUMNS}` returns it in raw (array) mode; PostgreSQL adds the chain. */
export type RawRow = [
  number,
  number,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  string,
  string,
  string,
  /** PostgreSQL: the writer's chain (SQLite: 0). */
  number?,
  /** SQLite from migration 9: how many events the row holds; NULL for a row of the earlier format. */
  (number | null)?,
];

export function toStored(r: RawRow): StoredJournalRow {
  return {
    seq: r[0],
    at: r[1],
    kind: r[2],
    executionId: r[3],
    actor: r[4],
    tool: r[5],
    requestRef: r[6],
    detailText: r[7],
    prevHash: r[8],
    hash: r[9],
    ...(r[10] ? { chain: r[10] } : {}),
    ...(r[11] != null ? { events: r[11] } : {}),
  };
}

/**
 * Whether a SQLite journal table has the `events` column (migration 9): a
 * file written before it is read as it is, without migrating it.
 */
export function hasEventsColumn(db: Database.Database, table: string): boolean {
  return (db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck(true).all(table) as string[]).includes(
    'events',
  );
}

/** The columns of a SQLite journal row in RawRow's order: chain 0, and the events column where there is one. */
function sqliteColumns(db: Database.Database, table: string): string {
  return `${COLUMNS}, 0, ${hasEventsColumn(db, table) ? 'events' : 'NULL'}`;
}

export const COLUMNS = 'seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash';

/**
 * The journal rows of a SQLite store file, exactly as stored, read-only and
 * without the store code (no migration, no key): what an auditor runs on a
 * copy of the file. Ordered by rowid — the physical order — so that a moved
 * row shows up as moved.
 */
export function* sqliteJournalRows(
  path: string,
  stream: JournalStream = 'activity',
): Generator<StoredJournalRow> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const table = TABLES[stream];
    const statement = db.prepare(`SELECT ${sqliteColumns(db, table)} FROM ${table} ORDER BY rowid`).raw(true);
    for (const row of statement.iterate() as Iterable<RawRow>) yield toStored(row);
  } finally {
    db.close();
  }
}

/**
 * The activity journal of a SQLite store file as the executions check folds
 * it (executions-check.ts journaledExecutionsOf), in rowid order: only the
 * rows that fold does anything with (an execution's, or a `trimmed` event),
 * and of those only the columns it reads — actor and tool of an `accepted`
 * event, the detail of the kinds whose detail it parses. It reads a third of
 * what sqliteJournalRows does, and builds no object per row.
 */
export function* sqliteExecutionEvents(path: string): Generator<ExecutionEventRow> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const kinds = DETAIL_KINDS.map((k) => `'${k}'`).join(', ');
    // A row of the one-row-per-transaction format (migration 9) is read whole and unfolded here.
    const rows = hasEventsColumn(db, 'activity_journal');
    const statement = db
      .prepare(
        `SELECT seq, at, kind, execution_id,
                CASE WHEN kind = 'accepted' THEN actor END, CASE WHEN kind = 'accepted' THEN tool END,
                CASE WHEN kind IN (${kinds}) ${rows ? 'OR events IS NOT NULL' : ''} THEN detail END
                ${rows ? ', events' : ''}
         FROM activity_journal WHERE execution_id IS NOT NULL OR kind = 'trimmed'
           ${rows ? 'OR events IS NOT NULL' : ''} ORDER BY rowid`,
      )
      .raw(true);
    for (const row of statement.iterate() as Iterable<[...ExecutionEventRow, (number | null)?]>) {
      if (row[7] == null) {
        yield row as unknown as ExecutionEventRow;
        continue;
      }
      yield* rowExecutionEvents(row[0], row[1], row[7], row[6] as string);
    }
  } finally {
    db.close();
  }
}

/** The events of a row of the one-row-per-transaction format as the executions check folds them. */
function* rowExecutionEvents(
  seq: number,
  at: number,
  events: number,
  eventsText: string,
): Generator<ExecutionEventRow> {
  const first = seq - events + 1;
  const parsed = JSON.parse(eventsText) as RowEvent[];
  for (let i = 0; i < parsed.length; i++) {
    const [kind, executionId, actor, tool, , detail] = parsed[i] as RowEvent;
    if (executionId === null && kind !== 'trimmed') continue;
    const accepted = kind === 'accepted';
    yield [
      first + i,
      at,
      kind,
      executionId,
      accepted ? actor : null,
      accepted ? tool : null,
      DETAIL_KINDS.includes(kind) ? JSON.stringify(detail) : null,
    ];
  }
}

/** How many events a SQLite journal holds (what verify's progress counts): a row of several counts each. */
export function sqliteJournalCount(path: string, stream: JournalStream = 'activity'): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const table = TABLES[stream];
    const n = hasEventsColumn(db, table) ? 'COALESCE(SUM(COALESCE(events, 1)), 0)' : 'COUNT(*)';
    return (db.prepare(`SELECT ${n} AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * One page of a PostgreSQL journal after seq $1, at most $2 rows. ORDER BY names the table's seq:
 * a bare `seq` is the float8 output column, which no index serves, so every page sorted all the
 * rows left and a full verify grew with the square of the journal.
 */
export function postgresJournalPageSql(
  stream: JournalStream,
  chain: '' | ', chain',
  events: '' | ', events' = '',
): string {
  // RawRow's order: the chain (0 before v4), then a row's count of events where the table has one.
  const tail = events ? `${chain || ', 0'}${events}` : chain;
  return `SELECT seq::float8, at::float8, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash${tail}
               FROM ${TABLES[stream]} WHERE seq > $1 ORDER BY ${TABLES[stream]}.seq LIMIT $2`;
}

/** The journal rows of a PostgreSQL store, in pages of `pageSize`, by seq. */
export async function* postgresJournalRows(
  url: string,
  stream: JournalStream = 'activity',
  pageSize = 20_000,
): AsyncGenerator<StoredJournalRow> {
  const client = await connect(url);
  try {
    const chain = (await hasColumn(client, TABLES[stream], 'chain')) ? ', chain' : '';
    // Rows of several events (ADR 0052): read when a migration has given the table their count.
    const events = (await hasColumn(client, TABLES[stream], 'events')) ? ', events' : '';
    // Whatever follows the last row read: a deleted row shows as a gap, a moved one out of place.
    let after = -1;
    for (;;) {
      const { rows } = await client.query<RawRow>({
        text: postgresJournalPageSql(stream, chain, events),
        values: [after, pageSize],
        rowMode: 'array',
      });
      for (const row of rows) yield toStored(row);
      if (rows.length < pageSize) return;
      after = (rows.at(-1) as RawRow)[0];
    }
  } finally {
    await client.end();
  }
}

/**
 * Each chain's end as a PostgreSQL store records it (journal_head): read
 * before the rows, so rows appended meanwhile only lengthen what is checked.
 */
export async function postgresRegistry(url: string, stream: JournalStream): Promise<RegisteredHead[]> {
  const client = await connect(url);
  try {
    if (!(await hasColumn(client, 'journal_head', 'chain'))) return [];
    const { rows } = await client.query<[number, number, string]>({
      text: 'SELECT chain, seq::float8, hash FROM journal_head WHERE stream = $1 AND seq > 0 ORDER BY chain',
      values: [stream],
      rowMode: 'array',
    });
    return rows.map(([chain, seq, hash]) => ({ chain, seq, hash }));
  } finally {
    await client.end();
  }
}

/** A connection of its own to a PostgreSQL store (pg is loaded on first use: an optional peer). */
async function connect(url: string): Promise<pg.Client> {
  const client = new (await loadPg()).Client({ connectionString: url });
  await client.connect();
  return client;
}

/**
 * Whether `table` has `column`: the chain (schema v4) — a database not yet migrated is verified as
 * one chain — or a row's count of events.
 */
async function hasColumn(client: pg.Client, table: string, column: string): Promise<boolean> {
  const { rows } = await client.query(
    'SELECT FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped',
    [table, column],
  );
  return rows.length > 0;
}

/** The execution rows of a SQLite store file, read-only, with each stored outcome's digest (executions-check.ts). */
export function* sqliteExecutionRows(path: string): Generator<StoredExecutionRow> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const statement = db
      .prepare(
        `SELECT e.id, e.actor, e.tool, e.state, e.updated_at, e.outcome, e.fingerprint,
                a.execution_id IS NOT NULL, a.decision, a.decided_by
         FROM executions e LEFT JOIN approval_requests a ON a.execution_id = e.id ORDER BY e.id`,
      )
      .raw(true);
    for (const r of statement.iterate() as Iterable<ExecutionRaw<Buffer | string>>)
      yield toExecution(r, sqliteFingerprint.decode);
  } finally {
    db.close();
  }
}

/** The execution rows of a PostgreSQL store, in pages of `pageSize`, by id. */
export async function* postgresExecutionRows(
  url: string,
  pageSize = 20_000,
): AsyncGenerator<StoredExecutionRow> {
  const client = await connect(url);
  try {
    let after = '';
    for (;;) {
      const { rows } = await client.query<ExecutionRaw<Buffer>>({
        text: `SELECT e.id, e.actor, e.tool, e.state::text, e.updated_at::float8, e.outcome, e.fingerprint,
                      a.execution_id IS NOT NULL, a.decision, a.decided_by
               FROM executions e LEFT JOIN approval_requests a ON a.execution_id = e.id
               WHERE e.id > $1 ORDER BY e.id LIMIT $2`,
        values: [after, pageSize],
        rowMode: 'array',
      });
      for (const row of rows) yield toExecution(row, postgresFingerprint.decode);
      if (rows.length < pageSize) return;
      after = (rows.at(-1) as ExecutionRaw<Buffer>)[0];
    }
  } finally {
    await client.end();
  }
}

type ExecutionRaw<Fingerprint = Buffer | string> = [
  string,
  string,
  string,
  string,
  number,
  string | null,
  /** The fingerprint as the store keeps it (identity/fingerprint-columns.ts). */
  Fingerprint,
  /** Has an approval request, its decision, its decider. */
  number | boolean,
  string | null,
  string | null,
];

/** `decodeFingerprint`: the dialect's column rule (SQLite and PostgreSQL keep other spellings differently). */
function toExecution<Fingerprint>(
  r: ExecutionRaw<Fingerprint>,
  decodeFingerprint: (stored: Fingerprint) => string,
): StoredExecutionRow {
  return {
    id: r[0],
    actor: r[1],
    tool: r[2],
    state: r[3],
    updatedAt: r[4],
    outcomeSha256: storedOutcomeDigest(r[5]),
    fingerprint: decodeFingerprint(r[6]),
    ...(r[7] ? { approval: { decision: r[8], decidedBy: r[9] } } : {}),
  };
}
