import pg from 'pg';
import { StoreUnavailableError } from '../../errors.js';
import { buildEntry } from '../../journal/chain.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../../journal/events.js';
import { withOutcomeDigest } from '../../journal/outcome-digest.js';
import { decodeOptional, encodeOptional, postgresFingerprint } from '../fingerprint-columns.js';
import { holderGoneSql } from '../lease.js';
import {
  type ExecutionColumns,
  entryFromColumns,
  type JournalColumns,
  recordFromColumns,
} from '../sql-columns.js';
import type { ExecutionState } from '../states.js';
import type {
  ClaimInput,
  ClaimOptions,
  ClaimResult,
  ExecutionFilter,
  ExecutionRecord,
  ExecutionStore,
  SweepResult,
  TransitionInput,
} from '../types.js';
import { migrate, quoteIdent } from './migrations.js';
import { bytesPerExecutionRow, type PostgresRowBytes } from './row-bytes.js';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database?…`, as libpq and node-postgres read it. */
  url: string;
  /**
   * The schema holding Idem's tables, created if missing. Default: the
   * connection's search_path (normally `public`).
   */
  schema?: string;
  pool?: {
    /** Connections this process may open. Default 10. */
    max?: number;
    /** How long to wait for a connection (a new one, or a free one from the pool) before the store counts as unavailable. */
    connectionTimeoutMs?: number;
    /** An unused connection is closed after this long. */
    idleTimeoutMs?: number;
  };
  /**
   * The server cancels a statement that runs (or waits for a lock) longer than
   * this, and the store counts as unavailable: the engine fails closed rather
   * than hang the call.
   */
  statementTimeoutMs?: number;
  /**
   * The server ends a session that stays this long inside a transaction — a
   * process frozen halfway must not hold the journal's lock for everyone.
   */
  idleInTransactionTimeoutMs?: number;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
}

export const POSTGRES_DEFAULTS = {
  poolMax: 10,
  connectionTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  statementTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 5_000,
} as const;

const QUERY_TIMEOUT_MARGIN_MS = 1_000;
const MIGRATION_TIMEOUT_MS = 15 * 60_000;

interface ExecutionRow extends ExecutionColumns {
  fingerprint: Buffer;
  request_digest: Buffer | null;
  read_at: number;
}

/** The journal's end, returned (and locked) by the statement that made the change. */
interface HeadColumns {
  head_seq: number | null;
  head_hash: string | null;
  head_at: number | null;
}

type JournalRow = JournalColumns;

/**
 * The database's clock in epoch milliseconds. Every time the store records or
 * compares comes from here, so gateways whose clocks disagree still agree on
 * when a lease ends.
 */
const CLOCK = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/** What every connection of a store shares, the migration's included. */
function connectionConfig(options: PostgresStoreOptions): pg.ClientConfig {
  return {
    connectionString: options.url,
    connectionTimeoutMillis: options.pool?.connectionTimeoutMs ?? POSTGRES_DEFAULTS.connectionTimeoutMs,
    application_name: options.applicationName ?? 'idem',
    keepAlive: true,
    options: [
      ...(options.schema === undefined ? [] : [`-c search_path=${searchPathOption(options.schema)}`]),
      // Every statement is a key lookup or an insert whose best plan never depends on the
      // values; planning it afresh each time (PostgreSQL's choice here) costs more than running it.
      '-c plan_cache_mode=force_generic_plan',
    ].join(' '),
  };
}

/** Every column but the claim token, which never leaves the store. */
const COLUMNS = `id, fingerprint, actor, tool, session, replay, state, created_at, updated_at, attach_until,
  dispatched_at, deadline_at, lease_owner, lease_expires_at, outcome, delivered_at, arguments_preview, note,
  request_digest`;

/**
 * Locks the journal's head row only if the change (`changed`) happened and has
 * events to journal ($1): a refused write never queues for the lock, and the
 * lock is taken after the row change, so it is held from here to COMMIT only.
 */
function headLockedAfter(changed: string): string {
  return `head AS (
    SELECT seq, hash, at FROM journal_head
    WHERE stream = 'activity' AND $1::boolean AND EXISTS (SELECT FROM ${changed})
    FOR UPDATE
  )`;
}

const HEAD = 'head.seq AS head_seq, head.hash AS head_hash, head.at AS head_at';

const HOLDER_KEEP = 0;
const HOLDER_SET = 1;
const HOLDER_CLEAR = 2;

/** The holder is gone, by the database's clock (see lease.ts). */
const STALE = holderGoneSql('c.now');

const SQL = {
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
        RETURNING ${COLUMNS}, created_at AS read_at
      ),
      ${headLockedAfter('ins')}
      SELECT ins.*, ${HEAD} FROM ins LEFT JOIN head ON true`,
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
  transition: {
    name: 'idem_transition',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
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
        RETURNING ${COLUMNS}, c.now AS read_at
      ),
      ${headLockedAfter('upd')}
      SELECT upd.*, ${HEAD} FROM upd LEFT JOIN head ON true`,
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
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE executions SET delivered_at = c.now FROM c
        WHERE id = $2 AND delivered_at IS NULL
        RETURNING c.now AS read_at
      ),
      ${headLockedAfter('upd')}
      SELECT upd.read_at, ${HEAD} FROM upd LEFT JOIN head ON true`,
  },
  // Not a named statement: a plan cached for one filter would be a poor plan for the next.
  list: `
    WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now)
    SELECT ${COLUMNS}, c.now AS read_at FROM executions, c
    WHERE ($1::execution_state[] IS NULL OR state = ANY($1::execution_state[]))
      AND ($2::text IS NULL OR tool = $2)
      AND ($3::text IS NULL OR actor = $3)
      AND ($4::bigint IS NULL OR created_at >= $4::bigint)
    ORDER BY id DESC
    LIMIT $5`,
  lockHead: {
    name: 'idem_lock_head',
    text: `
      SELECT seq AS head_seq, hash AS head_hash, at AS head_at, ${CLOCK} AS read_at
      FROM journal_head WHERE stream = $1
      FOR UPDATE`,
  },
  journal: { activity: journalStatements('activity'), sessions: journalStatements('sessions') },
  journalHead: {
    name: 'idem_journal_head',
    text: 'SELECT seq, hash FROM journal_head WHERE stream = $1',
  },
  journalFor: {
    name: 'idem_journal_for',
    text: 'SELECT * FROM activity_journal WHERE execution_id = $1 ORDER BY seq',
  },
  // Sweepers in several processes run at once: each skips the rows another holds rather than
  // queue behind it, so two sweeps never wait on each other (and cannot deadlock).
  expire: {
    name: 'idem_expire',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      stale AS (
        SELECT id FROM executions, c WHERE state = 'dispatched' AND ${STALE}
        FOR UPDATE OF executions SKIP LOCKED
      ),
      upd AS (
        UPDATE executions SET state = 'unknown', updated_at = c.now FROM c
        WHERE id IN (SELECT id FROM stale)
        RETURNING ${COLUMNS}, c.now AS read_at
      ),
      ${headLockedAfter('upd')}
      SELECT upd.*, ${HEAD} FROM upd LEFT JOIN head ON true`,
  },
  trim: {
    name: 'idem_trim',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now)
      DELETE FROM executions WHERE id IN (
        SELECT id FROM executions, c
        WHERE state IN ('completed', 'failed', 'denied') AND updated_at <= c.now - $1::bigint
        FOR UPDATE OF executions SKIP LOCKED
      )`,
  },
  wouldExpire: {
    name: 'idem_would_expire',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now)
      SELECT ${COLUMNS}, c.now AS read_at FROM executions, c WHERE state = 'dispatched' AND ${STALE}`,
  },
  wouldTrim: {
    name: 'idem_would_trim',
    text: `
      SELECT count(*)::int AS n FROM executions
      WHERE state IN ('completed', 'failed', 'denied') AND updated_at <= ${CLOCK} - $1::bigint`,
  },
  now: { name: 'idem_now', text: `SELECT ${CLOCK} AS now` },
} as const;

/** One journal's statements; the table name is one of two constants, never input. */
function journalStatements(stream: JournalStream) {
  const table = `${stream}_journal`;
  return {
    append: {
      name: `idem_append_${stream}`,
      text: `
        WITH entries AS (
          INSERT INTO ${table} (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash)
          SELECT e.seq, $1::bigint, e.kind, e.execution_id, e.actor, e.tool, e.request_ref, e.detail, e.prev_hash,
            e.hash
          FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::text[], $10::text[]) AS e(seq, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash)
        )
        UPDATE journal_head SET seq = $11::bigint, hash = $12, at = $1::bigint WHERE stream = '${stream}'`,
    },
    read: {
      name: `idem_read_${stream}`,
      text: `SELECT * FROM ${table} WHERE seq > $1 ORDER BY seq LIMIT $2`,
    },
  };
}

type Statement = { name: string; text: string };

/** A transaction in progress: its connection, and statements whose results wait for the COMMIT. */
interface Transaction {
  db: pg.PoolClient;
  /** Sends ROLLBACK now, behind what was sent; nothing is committed. */
  rollback(): void;
  defer(statement: Promise<unknown>): void;
}
type Db = pg.Pool | pg.PoolClient;

/**
 * Several gateway processes (or hosts) sharing one PostgreSQL database.
 *
 * The claim is one INSERT … ON CONFLICT DO NOTHING against a partial unique
 * index: of any number of concurrent claims, in any number of processes, the
 * database lets exactly one insert. A write and the journal entries that
 * describe it commit in one transaction; the journal's one-row head is locked
 * last, so appends from every process form one chain while the lock is held
 * for about one round trip. Statements of one transaction are pipelined:
 * a claim with its events costs two round trips.
 */
export class PostgresStore implements ExecutionStore {
  readonly kind = 'postgres' as const;
  readonly #pool: pg.Pool;
  #closed = false;

  /** Connects, brings the schema up to date and returns the store; StoreUnavailableError if it cannot. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const connection = connectionConfig(options);
    // Migrations get a connection of their own, without the per-call timeouts: a
    // migration may take long, and so may waiting for another process's.
    const client = new pg.Client({ ...connection, statement_timeout: MIGRATION_TIMEOUT_MS });
    client.on('error', ignore);
    try {
      await client.connect();
      await migrate(client, options.schema === undefined ? {} : { schema: options.schema });
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      const mapped = toStoreError(error);
      if (mapped instanceof StoreUnavailableError) throw mapped;
      throw new StoreUnavailableError(`cannot open the PostgreSQL store: ${messageOf(error)}`, {
        cause: error,
      });
    } finally {
      await client.end().catch(ignore);
    }
    return new PostgresStore(options, connection);
  }

  private constructor(options: PostgresStoreOptions, connection: pg.ClientConfig) {
    const statementTimeoutMs = options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs;
    this.#pool = new pg.Pool({
      ...connection,
      max: options.pool?.max ?? POSTGRES_DEFAULTS.poolMax,
      idleTimeoutMillis: options.pool?.idleTimeoutMs ?? POSTGRES_DEFAULTS.idleTimeoutMs,
      statement_timeout: statementTimeoutMs,
      // The server's timeout cannot help when the network, not the server, stopped answering:
      // then the client gives up a little later and drops the connection.
      query_timeout: statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
      idle_in_transaction_session_timeout:
        options.idleInTransactionTimeoutMs ?? POSTGRES_DEFAULTS.idleInTransactionTimeoutMs,
      // Statements of one transaction go out together instead of one round trip each.
      pipeline: true,
      types: TYPES,
    });
    // An idle connection the server drops (restart, failover) is an 'error' event; the
    // pool discards it and connects anew on next use. Unlistened, it would end the process.
    this.#pool.on('error', ignore);
  }

  async claim(input: ClaimInput, options: ClaimOptions = {}): Promise<ClaimResult> {
    const events = options.events ?? [];
    const fingerprint = postgresFingerprint.encode(input.fingerprint);
    const claim = query<ExecutionRow & HeadColumns>(SQL.claim, [
      events.length > 0,
      wholeMs(input.attachWindowMs),
      input.state === 'dispatched' ? wholeMs(input.dispatchTimeoutMs ?? 0) : null,
      wholeMs(input.leaseMs),
      input.id,
      fingerprint,
      input.actor,
      input.tool,
      input.session,
      input.replay,
      input.state,
      input.claimToken,
      input.leaseOwner,
      input.argumentsPreview,
      encodeOptional(postgresFingerprint, input.requestDigest),
    ]);
    const holder = query<ExecutionRow>(SQL.findActive, [fingerprint]);

    if (events.length === 0 && options.replacing === undefined) {
      return this.#use(async (db) => {
        const [row] = (await claim(db)).rows;
        if (row) return { won: true, record: toRecord(row) };
        const [active] = (await holder(db)).rows;
        return { won: false, record: active && toRecord(active) };
      });
    }
    return this.#transaction(async (tx) => {
      const retire =
        options.replacing === undefined ? [] : [query(SQL.retire, [options.replacing, fingerprint])(tx.db)];
      const [row] = (await last(retire, claim(tx.db))).rows;
      if (!row) {
        const read = holder(tx.db);
        // Whatever `replacing` retired stays active: a lost claim changes nothing.
        tx.rollback();
        const [active] = (await read).rows;
        return { won: false, record: active && toRecord(active) };
      }
      this.#append(tx, events, row.read_at, row);
      return { won: true, record: toRecord(row) };
    });
  }

  async transition(t: TransitionInput): Promise<ExecutionRecord | undefined> {
    const events = withOutcomeDigest(t.id, t.outcome, t.events) ?? [];
    const transition = query<ExecutionRow & HeadColumns>(SQL.transition, [
      events.length > 0,
      t.id,
      t.to,
      t.from,
      t.token ?? null,
      t.requireStale === true,
      t.holder === undefined ? HOLDER_KEEP : t.holder === null ? HOLDER_CLEAR : HOLDER_SET,
      t.holder?.token ?? null,
      t.holder?.owner ?? null,
      t.holder ? wholeMs(t.holder.leaseMs) : null,
      t.dispatchTimeoutMs === undefined ? null : wholeMs(t.dispatchTimeoutMs),
      t.outcome === undefined ? null : JSON.stringify(t.outcome),
      t.delivered === true,
      t.note ?? null,
      t.release === true,
    ]);
    const apply = async (db: Db, tx?: Transaction) => {
      const [row] = (await transition(db)).rows;
      if (!row) return undefined;
      if (tx) this.#append(tx, events, row.read_at, row);
      return toRecord(row);
    };
    return events.length === 0 ? this.#use((db) => apply(db)) : this.#transaction((tx) => apply(tx.db, tx));
  }

  async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    return this.#use(
      async (db) => (await query(SQL.renewLease, [id, token, wholeMs(leaseMs)])(db)).rowCount === 1,
    );
  }

  async markDelivered(id: string, events: ActivityEventInput[] = []): Promise<void> {
    const mark = query<{ read_at: number } & HeadColumns>(SQL.markDelivered, [events.length > 0, id]);
    const apply = async (db: Db, tx?: Transaction) => {
      const [row] = (await mark(db)).rows;
      if (row && tx) this.#append(tx, events, row.read_at, row);
    };
    await (events.length === 0 ? this.#use((db) => apply(db)) : this.#transaction((tx) => apply(tx.db, tx)));
  }

  async get(id: string): Promise<ExecutionRecord | undefined> {
    return this.#use(async (db) => {
      const [row] = (await query<ExecutionRow>(SQL.get, [id])(db)).rows;
      return row && toRecord(row);
    });
  }

  async findActive(fingerprint: string): Promise<ExecutionRecord | undefined> {
    return this.#use(async (db) => {
      const [row] = (await query<ExecutionRow>(SQL.findActive, [postgresFingerprint.encode(fingerprint)])(db))
        .rows;
      return row && toRecord(row);
    });
  }

  async list(filter: ExecutionFilter = {}): Promise<ExecutionRecord[]> {
    const states = filter.state === undefined ? null : ([] as ExecutionState[]).concat(filter.state);
    return this.#use(async (db) => {
      const { rows } = await db.query<ExecutionRow>(SQL.list, [
        states,
        filter.tool ?? null,
        filter.actor ?? null,
        filter.since ?? null,
        filter.limit ?? 100,
      ]);
      return rows.map(toRecord);
    });
  }

  async appendEvents(events: ActivityEventInput[], stream: JournalStream = 'activity'): Promise<void> {
    if (events.length === 0) return;
    await this.#transaction(async (tx) => {
      const [head] = (await query<HeadColumns & { read_at: number }>(SQL.lockHead, [stream])(tx.db)).rows;
      this.#append(tx, events, head!.read_at, head!, stream);
    });
  }

  async readJournal(
    afterSeq = 0,
    limit = 1000,
    stream: JournalStream = 'activity',
  ): Promise<ActivityEntry[]> {
    return this.#use(async (db) =>
      (await query<JournalRow>(SQL.journal[stream].read, [afterSeq, limit])(db)).rows.map(entryFromColumns),
    );
  }

  async journalHead(stream: JournalStream = 'activity'): Promise<{ seq: number; hash: string } | undefined> {
    return this.#use(async (db) => {
      const [head] = (await query<{ seq: number; hash: string }>(SQL.journalHead, [stream])(db)).rows;
      // The head row exists from the start; seq 0 is the empty chain.
      return head && head.seq > 0 ? { seq: head.seq, hash: head.hash } : undefined;
    });
  }

  async journalFor(executionId: string): Promise<ActivityEntry[]> {
    return this.#use(async (db) =>
      (await query<JournalRow>(SQL.journalFor, [executionId])(db)).rows.map(entryFromColumns),
    );
  }

  async sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult> {
    const retentionMs = wholeMs(options.retentionMs);
    if (options.dryRun) {
      return this.#use(async (db) => {
        const [stale, trimmable] = await Promise.all([
          query<ExecutionRow>(SQL.wouldExpire, [])(db),
          query<{ n: number }>(SQL.wouldTrim, [retentionMs])(db),
        ]);
        return {
          expired: stale.rows.map((row) => ({ ...toRecord(row), state: 'unknown' as const })),
          trimmed: trimmable.rows[0]?.n ?? 0,
        };
      });
    }
    return this.#transaction(async (tx) => {
      const { db } = tx;
      // Trimming first, so the journal's lock (taken by the expiry) is not held while it deletes.
      const trim = query(SQL.trim, [retentionMs])(db);
      const expire = query<ExecutionRow & HeadColumns>(SQL.expire, [true])(db);
      const [trimmed, expired] = await Promise.all([trim, expire]);
      // RETURNING gives no order; by id is creation order, as the journal should read.
      const rows = expired.rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      if (rows.length > 0) {
        const events = rows.map(
          (row): ActivityEventInput => ({
            kind: 'lease_expired',
            executionId: row.id,
            actor: row.actor,
            tool: row.tool,
            detail: { state: 'unknown' },
          }),
        );
        this.#append(tx, events, rows[0]!.read_at, rows[0]!);
      }
      return { expired: rows.map(toRecord), trimmed: trimmed.rowCount ?? 0 };
    });
  }

  async now(): Promise<number> {
    return this.#use(async (db) => (await query<{ now: number }>(SQL.now, [])(db)).rows[0]!.now);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  /** Bytes one execution row takes without its outcome, as PostgreSQL counts them (see row-bytes.ts). */
  async measureRowBytes(): Promise<PostgresRowBytes> {
    return this.#connection((client) => bytesPerExecutionRow(client));
  }

  /**
   * Writes `events` as the next entries of the chain, whose head the caller's
   * statement has locked and returned; the transaction's COMMIT follows in the
   * same round trip. `at` never goes below the previous entry's, so the chain's
   * times read in order even when another process's clock read came later.
   */
  #append(
    tx: Transaction,
    events: ActivityEventInput[],
    now: number,
    head: HeadColumns,
    stream: JournalStream = 'activity',
  ): void {
    if (events.length === 0) return;
    if (head.head_seq === null || head.head_hash === null || head.head_at === null) {
      throw new Error('journal head was not locked');
    }
    const at = Math.max(now, head.head_at);
    let seq = head.head_seq;
    let prevHash = head.head_hash;
    const entries: { entry: ActivityEntry; detailText: string }[] = [];
    for (const event of events) {
      const built = buildEntry(event, ++seq, at, prevHash);
      entries.push(built);
      prevHash = built.entry.hash;
    }
    // One array per column: all entries go in with one statement.
    const columns = [
      entries.map(({ entry }) => entry.seq),
      entries.map(({ entry }) => entry.kind),
      entries.map(({ entry }) => entry.executionId),
      entries.map(({ entry }) => entry.actor),
      entries.map(({ entry }) => entry.tool),
      entries.map(({ entry }) => entry.requestRef),
      // Stored as the canonical text the hash covers: a verifier hashes the bytes as stored.
      entries.map(({ detailText }) => detailText),
      entries.map(({ entry }) => entry.prevHash),
      entries.map(({ entry }) => entry.hash),
    ];
    tx.defer(query(SQL.journal[stream].append, [at, ...columns, seq, prevHash])(tx.db));
  }

  /** One statement (or a few that need no transaction) on a pooled connection. */
  async #use<T>(work: (db: Db) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('the PostgreSQL store is closed');
    try {
      return await work(this.#pool);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * BEGIN, `work`, COMMIT on one connection. BEGIN goes out with `work`'s
   * first statement, and COMMIT right behind the statements `work` deferred
   * (the journal append): their results are awaited together, so a claim and
   * its events take two round trips. If a deferred statement failed, the
   * server has turned the COMMIT into a rollback, and its error is thrown.
   * `work` may roll back instead.
   */
  async #transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#connection(async (db) => {
      let ended = false;
      // Rejections are collected at the end; until then they must not count as unhandled.
      const pending: Promise<unknown>[] = [];
      const defer = (statement: Promise<unknown>) => {
        statement.catch(ignore);
        pending.push(statement);
      };
      defer(db.query('BEGIN'));
      const result = await work({
        db,
        rollback: () => {
          ended = true;
          defer(db.query('ROLLBACK'));
        },
        defer,
      });
      await Promise.all(ended ? pending : [...pending, db.query('COMMIT')]);
      return result;
    });
  }

  /**
   * `work` on a connection of its own. On any failure the connection is
   * discarded rather than rolled back and reused: the server rolls back what
   * it held, and a connection in an unknown state never serves another call.
   */
  async #connection<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('the PostgreSQL store is closed');
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw toStoreError(error);
    }
    // Between our statements nobody else listens: a dropped connection must fail the call, not the process.
    client.on('error', ignore);
    try {
      const result = await work(client);
      client.off('error', ignore);
      client.release();
      return result;
    } catch (error) {
      client.off('error', ignore);
      client.release(true);
      throw toStoreError(error);
    }
  }
}

/** A prepared statement with its values, to run on a pool or a connection. */
function query<R extends pg.QueryResultRow = pg.QueryResultRow>(
  statement: Statement,
  values: unknown[],
): (db: Db) => Promise<pg.QueryResult<R>> {
  return (db) => db.query<R>({ name: statement.name, text: statement.text, values });
}

/** Waits for all, in order, and returns the last: statements sent back to back share a round trip. */
async function last<T>(before: Promise<unknown>[], final: Promise<T>): Promise<T> {
  const [result] = await Promise.all([final, ...before]);
  return result;
}

function toRecord(row: ExecutionRow): ExecutionRecord {
  return recordFromColumns(
    row,
    postgresFingerprint.decode(row.fingerprint),
    decodeOptional(postgresFingerprint, row.request_digest),
    row.read_at,
  );
}

const INT8_OID = 20;

/** bigint columns (milliseconds, seq) as numbers: all stay far below 2^53. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** Times are bigint columns, which refuse a fraction rather than round it. */
const wholeMs = Math.round;

/**
 * SQLSTATE classes and codes that mean "the database cannot be used right
 * now" — connection lost or refused, server shutting down or starting,
 * resources (disk, memory, connections) exhausted, a timeout, a conflict
 * worth retrying, a read-only standby — as opposed to a bug in a statement.
 */
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57P0[1-5]|57014|58...|55P03|40001|40P01|25006|28...|3D000)$/;

/** Failures below SQL: the socket, name resolution, the pool. */
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT',
]);
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed|Query read timeout|Cannot use a pool after calling end|timeout expired)/;

/** Connection failures become StoreUnavailableError, so the engine fails closed; a bug stays a bug. */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (isUnavailable(error)) {
    const code = (error as { code?: unknown }).code;
    return new StoreUnavailableError(
      `PostgreSQL store unavailable: ${messageOf(error)}${typeof code === 'string' ? ` (${code})` : ''}`,
      { cause: error },
    );
  }
  return error;
}

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof AggregateError && error.errors.some(isUnavailable)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (error instanceof pg.DatabaseError) return UNAVAILABLE_SQLSTATE.test(code);
    if (UNAVAILABLE_ERRNO.has(code)) return true;
  }
  return UNAVAILABLE_MESSAGE.test(error.message);
}

/** A schema name as a `-c search_path=` startup option: quoted, with the option syntax's escapes. */
function searchPathOption(schema: string): string {
  return quoteIdent(schema).replace(/[\\ ]/g, (c) => `\\${c}`);
}

function ignore(): void {}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
