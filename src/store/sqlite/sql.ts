import type Database from 'better-sqlite3';
import {
  decodeOptional,
  type SqliteFingerprint,
  sqliteFingerprint,
} from '../../identity/fingerprint-columns.js';
import type { JournalRow as JournalRowOf } from '../../journal/chain.js';
import type { ActivityEntry } from '../../journal/events.js';
import { EXECUTION_STATES, type ExecutionState, isFinished } from '../../journal/states.js';
import { HOLDER_KEEP, HOLDER_SET, holderGoneSql } from '../lease.js';
import { type ExecutionColumns, type JournalColumns, recordFromColumns, sqlStates } from '../sql-columns.js';
import { EXPIRED_STATE_SQL, expiresSql, trimmableSql } from '../sweep.js';
import type { ExecutionRecord, StateCount } from '../types.js';

export interface ExecutionRow extends ExecutionColumns {
  fingerprint: SqliteFingerprint;
  request_digest: SqliteFingerprint | null;
  active: 0 | 1;
  claim_token: string | null;
}

export type JournalRow = JournalColumns;

/** journal_seqs with `@journalSeqs` (comma-separated, or NULL for none) added at its end. */
const APPEND_SEQS = `CASE WHEN @journalSeqs IS NULL THEN journal_seqs WHEN journal_seqs IS NULL THEN @journalSeqs
          ELSE journal_seqs || ',' || @journalSeqs END`;

/** The holder is gone, by the store's clock (see lease.ts). */
const STALE = holderGoneSql('@now');

/**
 * The rows of the executions_unfinished index (migration 8), as its WHERE spells it: a query
 * that has this term can read the index (SQLite matches a partial index's WHERE term for term).
 */
export const UNFINISHED = EXECUTION_STATES.filter((state) => !isFinished(state));
export const UNFINISHED_ROWS = `state IN (${sqlStates(UNFINISHED)})`;

/** The sweep's two conditions (store/sweep.ts), by the store's clock. */
const EXPIRES = `${UNFINISHED_ROWS} AND ${expiresSql('@now')}`;
/** A trim reads the rowid range trimBoundary found: rows inserted before the cutoff. */
const TRIMMABLE = `rowid <= @lastRowid AND ${trimmableSql('@cutoff')}`;

/**
 * The prepared statements, named for declaration output (better-sqlite3's own
 * statement type cannot be named outside its module); prepareStatements must match.
 */
export interface Statements {
  insert: Database.Statement<Record<string, unknown>>;
  retire: Database.Statement<[string, SqliteFingerprint]>;
  get: Database.Statement<[string], ExecutionRow>;
  findActive: Database.Statement<[SqliteFingerprint], ExecutionRow>;
  /** The rowid of the active execution of a fingerprint, read from the claim's index alone. */
  activeRowid: Database.Statement<[SqliteFingerprint], number>;
  transition: Database.Statement<Record<string, unknown>>;
  transitionReleasing: Database.Statement<Record<string, unknown>>;
  renewLease: Database.Statement<{ id: string; token: string; leaseMs: number; now: number }>;
  markDelivered: Database.Statement<{ id: string; now: number }>;
  expire: Database.Statement<{ now: number }, ExecutionRow>;
  trim: Database.Statement<TrimRange, { id: string }>;
  wouldExpire: Database.Statement<{ now: number }, ExecutionRow>;
  wouldTrim: Database.Statement<TrimRange, { n: number }>;
  /** The first row inserted at or after a rowid, and when: trimBoundary's probe. */
  createdFrom: Database.Statement<[number], { rowid: number; created_at: number }>;
  lastRowid: Database.Statement<[], number | null>;
  countState: Database.Statement<[string], { n: number; oldest: number | null }>;
  /** countState of an unfinished state, from the executions_unfinished index alone. */
  countUnfinishedState: Database.Statement<[string], { n: number; oldest: number | null }>;
  journal: Record<'activity' | 'sessions', JournalStatements>;
  journalFor: Database.Statement<{ id: string }, JournalRow>;
  /** Adds seqs (comma-separated) to an execution row's journal_seqs; changes nothing if there is no row. */
  noteJournalSeqs: Database.Statement<{ id: string; journalSeqs: string }>;
  /** An entry of an execution no row names (journalFor reads it from here). */
  journalRef: Database.Statement<[string, number]>;
}

/** One hash-chained journal table's statements. */
export interface JournalStatements {
  head: Database.Statement<[], { seq: number; hash: string }>;
  /** An INSERT of one row (a transaction's events), values in JOURNAL_COLUMNS order. */
  insert: Database.Statement<unknown[]>;
  read: Database.Statement<[number, number], JournalRow>;
}

/** A journal row's columns, in the order journal-append.ts lays out their values. */
export const JOURNAL_COLUMNS = [
  'seq',
  'at',
  'kind',
  'execution_id',
  'actor',
  'tool',
  'request_ref',
  'detail',
  'prev_hash',
  'hash',
  'events',
] as const;

/**
 * An entry's values in JOURNAL_COLUMNS order, as a row of the earlier format (one event,
 * `events` NULL), `detailText` being the canonical text its hash covers. The store writes
 * rows of several events (journalRowValues); this is for tools that build the old format.
 */
export function journalColumnValues(entry: ActivityEntry, detailText: string): unknown[] {
  const { seq, at, kind, executionId, actor, tool, requestRef, prevHash, hash } = entry;
  return [seq, at, kind, executionId, actor, tool, requestRef, detailText, prevHash, hash, null];
}

/**
 * A row of the one-row-per-transaction format in JOURNAL_COLUMNS order (migration 9): kind ''
 * and no envelope of its own — its events carry theirs, in `detail`.
 */
export function journalRowValues(row: JournalRowOf): unknown[] {
  return [row.seq, row.at, '', null, null, null, null, row.eventsText, row.prevHash, row.hash, row.events];
}

/*
 * The claim's INSERT and the transition's UPDATE return no rows: the store reads the row
 * back by index instead. RETURNING * cost 20–25 µs a statement here (bench/results/NOTES.md §7,
 * "Afternoon"), more than the SELECT that the claim makes anyway to check its row can be found again.
 */
export function prepareStatements(db: Database.Database): Statements {
  return {
    insert: db.prepare<Record<string, unknown>>(`
      INSERT INTO executions (id, fingerprint, active, actor, tool, session, replay, state, created_at, updated_at,
        attach_until, dispatched_at, deadline_at, claim_token, lease_owner, lease_expires_at, arguments_preview,
        request_digest, journal_seqs)
      VALUES (@id, @fingerprint, 1, @actor, @tool, @session, @replay, @state, @now, @now,
        @attachUntil, CASE WHEN @deadlineAt IS NULL THEN NULL ELSE @now END, @deadlineAt,
        @claimToken, @leaseOwner, @leaseExpiresAt, @argumentsPreview, @requestDigest, @journalSeqs)
      ON CONFLICT (fingerprint) WHERE active = 1 DO NOTHING`),
    retire: db.prepare<[string, SqliteFingerprint]>(
      'UPDATE executions SET active = 0 WHERE id = ? AND fingerprint = ? AND active = 1',
    ),
    get: db.prepare<[string], ExecutionRow>('SELECT * FROM executions WHERE id = ?'),
    findActive: db.prepare<[SqliteFingerprint], ExecutionRow>(
      'SELECT * FROM executions WHERE fingerprint = ? AND active = 1',
    ),
    activeRowid: db
      .prepare<[SqliteFingerprint], number>(
        'SELECT rowid FROM executions WHERE fingerprint = ? AND active = 1',
      )
      .pluck(),
    transition: db.prepare<Record<string, unknown>>(transitionSql({ releases: false })),
    transitionReleasing: db.prepare<Record<string, unknown>>(transitionSql({ releases: true })),
    renewLease: db.prepare<{ id: string; token: string; leaseMs: number; now: number }>(`
      UPDATE executions SET lease_expires_at = @now + @leaseMs
      WHERE id = @id AND claim_token = @token AND lease_expires_at IS NOT NULL`),
    markDelivered: db.prepare<{ id: string; now: number }>(
      'UPDATE executions SET delivered_at = @now WHERE id = @id AND delivered_at IS NULL',
    ),
    expire: db.prepare<{ now: number }, ExecutionRow>(`
      UPDATE executions SET state = ${EXPIRED_STATE_SQL}, updated_at = @now
      WHERE ${EXPIRES}
      RETURNING *`),
    trim: db.prepare<TrimRange, { id: string }>(`
      DELETE FROM executions
      WHERE ${TRIMMABLE}
      RETURNING id`),
    wouldExpire: db.prepare<{ now: number }, ExecutionRow>(
      `SELECT * FROM executions WHERE ${EXPIRES} ORDER BY id`,
    ),
    wouldTrim: db.prepare<TrimRange, { n: number }>(`
      SELECT COUNT(*) AS n FROM executions WHERE ${TRIMMABLE}`),
    createdFrom: db.prepare<[number], { rowid: number; created_at: number }>(
      'SELECT rowid, created_at FROM executions WHERE rowid >= ? ORDER BY rowid LIMIT 1',
    ),
    lastRowid: db.prepare<[], number | null>('SELECT max(rowid) FROM executions').pluck(),
    // A finished state has no index: its count reads every row (the console's, never a call's).
    countState: db.prepare<[string], { n: number; oldest: number | null }>(
      'SELECT COUNT(*) AS n, MIN(updated_at) AS oldest FROM executions WHERE state = ?',
    ),
    // Both aggregates read the executions_unfinished index alone (a covering index): no row is visited.
    countUnfinishedState: db.prepare<[string], { n: number; oldest: number | null }>(
      `SELECT COUNT(*) AS n, MIN(updated_at) AS oldest FROM executions WHERE state = ? AND ${UNFINISHED_ROWS}`,
    ),
    journal: {
      activity: journalStatements(db, 'activity_journal'),
      sessions: journalStatements(db, 'sessions_journal'),
    },
    // By seq, from the row's list and from journal_refs (migration 7); execution_id is checked
    // as well, so a list that names another execution's entry shows nothing of it. A row of
    // several events (migration 9) has no execution_id of its own: the store keeps its events
    // of this execution only (sqlite-store.ts journalFor).
    journalFor: db.prepare<{ id: string }, JournalRow>(`
      SELECT * FROM activity_journal
      WHERE seq IN (
          SELECT value FROM json_each('[' || (SELECT journal_seqs FROM executions WHERE id = @id) || ']')
          UNION SELECT seq FROM journal_refs WHERE execution_id = @id)
        AND (execution_id = @id OR events IS NOT NULL)
      ORDER BY seq`),
    noteJournalSeqs: db.prepare<{ id: string; journalSeqs: string }>(
      `UPDATE executions SET journal_seqs = ${APPEND_SEQS} WHERE id = @id`,
    ),
    journalRef: db.prepare<[string, number]>(
      'INSERT OR IGNORE INTO journal_refs (execution_id, seq) VALUES (?, ?)',
    ),
  };
}

/**
 * A transition's UPDATE, in two forms: one that releases the fingerprint (active = 0) and one
 * that does not touch `active` at all. Any assignment to `active`, even of its own value, makes
 * SQLite rewrite the row's entry in the partial index on the fingerprint (its WHERE names
 * `active`): one more page in the WAL, and in the next sync, for every outcome.
 */
function transitionSql(options: { releases: boolean }): string {
  return `
      UPDATE executions SET
        state = @to,
        updated_at = @now,
        claim_token = CASE @holder WHEN ${HOLDER_KEEP} THEN claim_token WHEN ${HOLDER_SET} THEN @holderToken END,
        lease_owner = CASE @holder WHEN ${HOLDER_KEEP} THEN lease_owner WHEN ${HOLDER_SET} THEN @holderOwner END,
        lease_expires_at = CASE @holder
          WHEN ${HOLDER_KEEP} THEN lease_expires_at WHEN ${HOLDER_SET} THEN @now + @holderLeaseMs END,
        dispatched_at = CASE WHEN @dispatchTimeoutMs IS NULL THEN dispatched_at ELSE @now END,
        deadline_at = CASE WHEN @dispatchTimeoutMs IS NULL THEN deadline_at ELSE @now + @dispatchTimeoutMs END,
        outcome = COALESCE(@outcome, outcome),
        delivered_at = CASE WHEN @delivered = 1 THEN COALESCE(delivered_at, @now) ELSE delivered_at END,
${options.releases ? '        active = 0,\n' : ''}        note = COALESCE(@note, note),
        journal_seqs = ${APPEND_SEQS}
      WHERE id = @id
        AND state IN (SELECT value FROM json_each(@from))
        AND (@token IS NULL OR claim_token = @token)
        AND (@requireStale = 0 OR ${STALE})
        AND (@checkLease = 0 OR lease_expires_at IS @leaseExpiresAt)`;
}

/** One hash-chained journal table's statements; the table name is one of two constants, never input. */
function journalStatements(
  db: Database.Database,
  table: 'activity_journal' | 'sessions_journal',
): JournalStatements {
  return {
    head: db.prepare<[], { seq: number; hash: string }>(
      `SELECT seq, hash FROM ${table} ORDER BY seq DESC LIMIT 1`,
    ),
    insert: db.prepare<unknown[]>(
      `INSERT INTO ${table} (${JOURNAL_COLUMNS.join(', ')}) VALUES (${JOURNAL_COLUMNS.map(() => '?').join(', ')})`,
    ),
    read: db.prepare<[number, number], JournalRow>(
      `SELECT * FROM ${table} WHERE seq > ? ORDER BY seq LIMIT ?`,
    ),
  };
}

/** Times are STRICT INTEGER columns, which refuse a fraction rather than round it. */
export const wholeMs = Math.round;

export function toRecord(row: ExecutionRow, readAt: number): ExecutionRecord {
  return recordFromColumns(
    row,
    sqliteFingerprint.decode(row.fingerprint),
    decodeOptional(sqliteFingerprint, row.request_digest),
    readAt,
  );
}

/** One state's count and oldest last change (ExecutionStore.countStates). */
export function stateCount(statements: Statements, state: ExecutionState): StateCount {
  const count = isFinished(state) ? statements.countState : statements.countUnfinishedState;
  const { n, oldest } = count.get(state)!;
  return { state, count: n, oldestUpdatedAt: oldest };
}

/** What a trim reads: rows up to `lastRowid` whose last change is at or before `cutoff`. */
export interface TrimRange {
  cutoff: number;
  lastRowid: number;
}

/**
 * The trim's range: the last rowid of a row created at or before `cutoff`. Rows are inserted in
 * the order of the store's clock, so created_at grows with the rowid, and a binary search on it
 * finds the boundary in ~20 lookups; only rows inserted before it are read (the finished ones
 * nearly all go, and what stays — unfinished, or changed since — is what later sweeps read
 * again). A clock that stepped back only moves the boundary earlier: a row past it is trimmed
 * by a later sweep, never one that is not trimmable (the trim's own condition still holds).
 */
export function trimBoundary(statements: Statements, cutoff: number): TrimRange {
  let low = 0;
  let high = statements.lastRowid.get() ?? 0;
  // Invariant: every probed row at or before `low` was created at or before the cutoff.
  while (low < high) {
    const middle = low + Math.ceil((high - low) / 2);
    const row = statements.createdFrom.get(middle);
    if (row && row.created_at <= cutoff) low = Math.max(middle, row.rowid);
    else high = middle - 1;
  }
  return { cutoff, lastRowid: low };
}
