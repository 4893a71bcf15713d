import { decodeOptional, postgresFingerprint } from '../../identity/fingerprint-columns.js';
import type { JournalStream } from '../../journal/events.js';
import type { WriteSync } from '../durability.js';
import { HOLDER_KEEP, HOLDER_SET, holderGoneSql } from '../lease.js';
import { type ExecutionColumns, type JournalColumns, recordFromColumns } from '../sql-columns.js';
import { EXPIRED_STATE_SQL, expiresSql, trimmableSql } from '../sweep.js';
import type { ClaimInput, ExecutionRecord } from '../types.js';

export interface ExecutionRow extends ExecutionColumns {
  fingerprint: Buffer;
  request_digest: Buffer | null;
  read_at: number;
}

export type JournalRow = JournalColumns;

/**
 * The database's clock in epoch milliseconds. Every time the store records or
 * compares comes from here, so gateways whose clocks disagree still agree on
 * when a lease ends.
 */
export const CLOCK = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/**
 * A write's first CTE, `c`: the database's clock as `c.now`, read once for the
 * whole statement. For a lazy write (src/store/durability.ts) it also turns
 * `synchronous_commit` off until the end of this transaction (set_config's
 * is_local): the commit, at the end of the statement (it runs alone, in an
 * implicit transaction), then returns without waiting for the WAL flush. The
 * commit reads the setting before the transaction's settings are undone, so
 * the pooled connection's next statement commits synchronously again.
 * PostgreSQL flushes its WAL in order: the next synchronous commit, on any
 * connection, carries this one to disk; without one, the WAL writer (woken by
 * the async commit) flushes it within wal_writer_delay, 200 ms by default as
 * OUTCOME_SYNC_WITHIN_MS, and at worst three times that (PostgreSQL's
 * "Asynchronous Commit"). MATERIALIZED and joined by the write, so it runs
 * before any row is written, and a statement that writes nothing commits
 * nothing to lose.
 */
function clockFirst(sync: WriteSync): string {
  const lazy = sync === 'lazy' ? `, set_config('synchronous_commit', 'off', true) AS lazy` : '';
  return `c AS MATERIALIZED (SELECT ${CLOCK} AS now${lazy})`;
}

/** Every column but the claim token, which never leaves the store. */
export const COLUMNS = `id, fingerprint, actor, tool, session, replay, state, created_at, updated_at, attach_until,
  dispatched_at, deadline_at, lease_owner, lease_expires_at, outcome, delivered_at, arguments_preview, note,
  request_digest, upstream_task`;

/**
 * Appends the events ($first: the chain, then the 4 arrays of journal-rows.ts journalParams)
 * as one row (journal_append_rows, migration 8), in the statement that made the change
 * (`changed`, at most one row), only if it happened and has events ($1): a refused write never
 * touches the journal, and the chain's head is locked from here to COMMIT only — the end of
 * this statement when it runs alone. Referenced from the final SELECT, so it runs.
 */
export function journalAfter(changed: string, first: number): string {
  const p = (i: number) => `$${first + i}`;
  return `j AS (
    SELECT journal_append_rows('activity', ${p(0)}::integer, ${changed}.read_at, ${p(1)}::integer[], ${p(2)}::text[],
      ${p(3)}::integer[], ${p(4)}::text[]) AS seq
    FROM ${changed} WHERE $1::boolean
  )`;
}

export const JOURNALED = '(SELECT max(seq) FROM j) AS journal_seq';

/**
 * What the database decides in a claimed row: its times, from its clock. A claim returns only
 * these; the rest of a new row is what the claim sent (claimedRecord).
 */
const CLAIM_TIMES = 'created_at, updated_at, attach_until, dispatched_at, deadline_at, lease_expires_at';

export type ClaimedRow = Pick<
  ExecutionRow,
  | 'created_at'
  | 'updated_at'
  | 'attach_until'
  | 'dispatched_at'
  | 'deadline_at'
  | 'lease_expires_at'
  | 'read_at'
>;

/** The holder is gone, by the database's clock (see lease.ts). */
const STALE = holderGoneSql('c.now');

/** The sweep's expiry (store/sweep.ts), by the database's clock. */
const EXPIRES = expiresSql('c.now');

export const SQL = {
  claim: {
    name: 'idem_claim',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      ins AS (
        INSERT INTO executions (created_at, updated_at, attach_until, dispatched_at, deadline_at,
          lease_expires_at, active, id, fingerprint, actor, tool, session, replay, state, claim_token,
          lease_owner, arguments_preview, request_digest)
        SELECT c.now, c.now, c.now + $2::bigint, CASE WHEN $3::bigint IS NULL THEN NULL ELSE c.now END,
          c.now + $3::bigint, c.now + $4::bigint, true, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15
        FROM c
        ON CONFLICT (fingerprint) WHERE active DO NOTHING
        RETURNING ${CLAIM_TIMES}, created_at AS read_at
      ),
      ${journalAfter('ins', 16)}
      SELECT ins.*, ${JOURNALED} FROM ins`,
  },
  retire: {
    name: 'idem_retire',
    text: 'UPDATE executions SET active = false WHERE id = $1 AND fingerprint = $2 AND active',
  },
  findActive: {
    name: 'idem_find_active',
    text: `SELECT ${COLUMNS}, ${CLOCK} AS read_at FROM executions WHERE fingerprint = $1 AND active`,
  },
  get: {
    name: 'idem_get',
    text: `SELECT ${COLUMNS}, ${CLOCK} AS read_at FROM executions WHERE id = $1`,
  },
  // The holder's own outcome is lazy, every other transition synced (durability.ts).
  transition: {
    sync: transition('idem_transition', 'sync'),
    lazy: transition('idem_transition_lazy', 'lazy'),
  },
  renewLease: {
    name: 'idem_renew_lease',
    text: `
      UPDATE executions SET lease_expires_at = ${CLOCK} + $3::bigint
      WHERE id = $1 AND claim_token = $2 AND lease_expires_at IS NOT NULL`,
  },
  markDelivered: {
    name: 'idem_mark_delivered',
    text: `
      WITH ${clockFirst('lazy')},
      upd AS (
        UPDATE executions SET delivered_at = c.now FROM c
        WHERE id = $2 AND delivered_at IS NULL
        RETURNING c.now AS read_at
      ),
      ${journalAfter('upd', 3)}
      SELECT upd.read_at, ${JOURNALED} FROM upd`,
  },
  /**
   * Events appended ($1 the stream, $2 the chain, then the arrays), at the database's time. Lazy
   * on their own (appendEvents); inside a transaction whose commit must be synced (a decision, the
   * sweep's expiries), the synced one, else it would turn that whole transaction's commit async.
   */
  append: { sync: append('idem_append', 'sync'), lazy: append('idem_append_lazy', 'lazy') },
  registerChain: { name: 'idem_register_chain', text: 'SELECT journal_register_chain() AS chain' },
  journal: { activity: journalStatements('activity'), sessions: journalStatements('sessions') },
  journalHead: {
    name: 'idem_journal_head',
    text: 'SELECT seq, hash FROM journal_head WHERE stream = $1 ORDER BY seq DESC LIMIT 1',
  },
  journalChains: {
    name: 'idem_journal_chains',
    text: 'SELECT chain, seq, hash FROM journal_head WHERE stream = $1 AND seq > 0 ORDER BY chain',
  },
  // A row of the earlier format by its execution_id; one of several events (migration 8) by
  // journal_refs: it has no execution_id of its own, and the store keeps its events of this
  // execution only (postgres-store.ts journalFor).
  journalFor: {
    name: 'idem_journal_for',
    text: `SELECT * FROM activity_journal WHERE execution_id = $1
      UNION ALL
      SELECT j.* FROM journal_refs r JOIN activity_journal j ON j.seq = r.seq
        WHERE r.execution_id = $1 AND j.events IS NOT NULL
      ORDER BY seq`,
  },
  // Sweepers in several processes run at once: each skips the rows another holds rather than
  // queue behind it, so two sweeps never wait on each other (and cannot deadlock).
  expire: {
    name: 'idem_expire',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      stale AS (
        SELECT id FROM executions, c WHERE ${EXPIRES}
        FOR UPDATE OF executions SKIP LOCKED
      ),
      upd AS (
        UPDATE executions SET state = ${EXPIRED_STATE_SQL}, updated_at = c.now FROM c
        WHERE id IN (SELECT id FROM stale)
        RETURNING ${COLUMNS}, c.now AS read_at
      )
      SELECT * FROM upd`,
  },
  trim: {
    name: 'idem_trim',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now)
      DELETE FROM executions WHERE id IN (
        SELECT id FROM executions, c
        WHERE ${trimmableSql('c.now - $1::bigint')}
        FOR UPDATE OF executions SKIP LOCKED
      )
      RETURNING id`,
  },
  wouldExpire: {
    name: 'idem_would_expire',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now)
      SELECT ${COLUMNS}, c.now AS read_at FROM executions, c WHERE ${EXPIRES}`,
  },
  wouldTrim: {
    name: 'idem_would_trim',
    text: `
      SELECT count(*)::int AS n FROM executions
      WHERE ${trimmableSql(`${CLOCK} - $1::bigint`)}`,
  },
  now: { name: 'idem_now', text: `SELECT ${CLOCK} AS now` },
  /**
   * Each state asked ($1, in order), its count and oldest updated_at, off the (state, updated_at)
   * index; one row with a null state when none is asked, so the clock is always read.
   */
  countStates: {
    name: 'idem_count_states',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      s AS (SELECT state, i FROM unnest($1::execution_state[]) WITH ORDINALITY AS s(state, i))
      SELECT c.now AS read_at, s.state,
        (SELECT COUNT(*) FROM executions e WHERE e.state = s.state) AS n,
        (SELECT MIN(e.updated_at) FROM executions e WHERE e.state = s.state) AS oldest
      FROM c LEFT JOIN s ON true
      ORDER BY s.i`,
  },
} as const;

/** A transition's statement; `sync` says whether its commit waits for the WAL flush (clockFirst). */
function transition(name: string, sync: WriteSync): Statement {
  return {
    name,
    text: `
      WITH ${clockFirst(sync)},
      upd AS (
        UPDATE executions SET
          state = $3,
          updated_at = c.now,
          claim_token = CASE $7::int WHEN ${HOLDER_KEEP} THEN claim_token WHEN ${HOLDER_SET} THEN $8 END,
          lease_owner = CASE $7::int WHEN ${HOLDER_KEEP} THEN lease_owner WHEN ${HOLDER_SET} THEN $9 END,
          lease_expires_at = CASE $7::int
            WHEN ${HOLDER_KEEP} THEN lease_expires_at WHEN ${HOLDER_SET} THEN c.now + $10::bigint END,
          dispatched_at = CASE WHEN $11::bigint IS NULL THEN dispatched_at ELSE c.now END,
          deadline_at = CASE WHEN $11::bigint IS NULL THEN deadline_at ELSE c.now + $11::bigint END,
          outcome = COALESCE($12, outcome),
          delivered_at = CASE WHEN $13::boolean THEN COALESCE(delivered_at, c.now) ELSE delivered_at END,
          note = COALESCE($14, note),
          active = active AND NOT $15::boolean
        FROM c
        WHERE id = $2
          AND state = ANY($4::execution_state[])
          AND ($5::text IS NULL OR claim_token = $5)
          AND (NOT $6::boolean OR ${STALE})
          AND (NOT $16::boolean OR lease_expires_at IS NOT DISTINCT FROM $17::bigint)
        RETURNING ${COLUMNS}, c.now AS read_at
      ),
      ${journalAfter('upd', 18)}
      SELECT upd.*, ${JOURNALED} FROM upd`,
  };
}

/** A journal append's statement (SQL.append); `sync` as in clockFirst. */
function append(name: string, sync: WriteSync): Statement {
  return {
    name,
    text: `
      WITH ${clockFirst(sync)}
      SELECT journal_append_rows($1, $2::integer, NULL, $3::integer[], $4::text[], $5::integer[], $6::text[]) AS seq
      FROM c`,
  };
}

/** One journal's reads; the table name is one of two constants, never input. */
function journalStatements(stream: JournalStream) {
  const table = `${stream}_journal`;
  return {
    read: {
      name: `idem_read_${stream}`,
      text: `SELECT * FROM ${table} WHERE seq > $1 ORDER BY seq LIMIT $2`,
    },
  };
}

export type Statement = { name: string; text: string };

/** Times are bigint columns, which refuse a fraction rather than round it. */
export const wholeMs = Math.round;

/**
 * The record of a claim that won: its row holds exactly what the INSERT wrote — the claim's
 * own values, the times `row` returns, and nothing else yet. Reading the claim's strings back
 * would cost a column each way on the wire and in node-postgres, for values the caller sent
 * (bench/results/NOTES.md, issue 30). The fingerprints are decoded from the bytes stored, as a read does.
 */
export function claimedRecord(
  input: ClaimInput,
  stored: { fingerprint: Buffer; requestDigest: Buffer | null },
  row: ClaimedRow,
): ExecutionRecord {
  // Every column by name, not `...row`: spreading the driver's row and adding the rest costs
  // V8 tens of µs per object here, more than the columns it saves.
  return toRecord({
    id: input.id,
    fingerprint: stored.fingerprint,
    request_digest: stored.requestDigest,
    actor: input.actor,
    tool: input.tool,
    session: input.session,
    replay: input.replay,
    state: input.state,
    created_at: row.created_at,
    updated_at: row.updated_at,
    attach_until: row.attach_until,
    dispatched_at: row.dispatched_at,
    deadline_at: row.deadline_at,
    lease_owner: input.leaseOwner,
    lease_expires_at: row.lease_expires_at,
    outcome: null,
    delivered_at: null,
    arguments_preview: input.argumentsPreview,
    note: null,
    upstream_task: null,
    read_at: row.read_at,
  });
}

export function toRecord(row: ExecutionRow): ExecutionRecord {
  return recordFromColumns(
    row,
    postgresFingerprint.decode(row.fingerprint),
    decodeOptional(postgresFingerprint, row.request_digest),
    row.read_at,
  );
}
