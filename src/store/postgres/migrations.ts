import type pg from 'pg';
import { StoreUnavailableError } from '../../errors.js';
import { GENESIS_HASH } from '../../journal/chain.js';
import { JOURNAL_ROWS_MIGRATION } from './migration-journal-rows.js';

export interface Migration {
  /** Row in schema_migrations after this migration. Consecutive from 1. */
  version: number;
  name: string;
  sql: string;
}

/**
 * The schema, as the ordered steps that build it. Append only: a shipped
 * migration is never edited, since databases in the field already ran it.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'executions and activity journal',
    sql: `
      -- Enums: 4 bytes in the row and its index where the names took up to 18, still read as names.
      CREATE TYPE execution_state AS ENUM ('accepted', 'awaiting_approval', 'authorized', 'dispatched',
        'completed', 'failed', 'unknown', 'denied');
      CREATE TYPE replay_class AS ENUM ('read_only', 'keyed', 'status', 'review');

      -- Fixed-width columns first: PostgreSQL pads each to its alignment, and
      -- 8-byte integers after a 1-byte column would cost up to 7 bytes a row.
      CREATE TABLE executions (
        created_at        bigint NOT NULL,
        updated_at        bigint NOT NULL,
        attach_until      bigint NOT NULL,
        dispatched_at     bigint,
        deadline_at       bigint,
        lease_expires_at  bigint,
        delivered_at      bigint,
        state             execution_state NOT NULL,
        replay            replay_class NOT NULL,
        -- True while this execution is the one a call with its fingerprint attaches to.
        active            boolean NOT NULL,
        -- "C": byte order, which is creation order for ULIDs, and cheaper comparisons.
        id                text COLLATE "C" PRIMARY KEY,
        -- The 32 bytes of an 'fp_' fingerprint; any other spelling as 0xFF + its UTF-8 (see fingerprint-columns.ts).
        fingerprint       bytea NOT NULL,
        actor             text NOT NULL,
        tool              text NOT NULL,
        session           text,
        claim_token       text,
        lease_owner       text,
        arguments_preview text NOT NULL,
        note              text,
        -- JSON text, not jsonb: jsonb refuses \\u0000 and lone surrogates, which results may hold.
        -- Last, so a large result is the one value TOAST moves out of the row.
        outcome           text
      );

      -- The claim: at most one active execution per fingerprint.
      CREATE UNIQUE INDEX executions_active_fingerprint ON executions (fingerprint) WHERE active;
      -- The sweeper's two scans: dispatched ones, and finished ones by age.
      CREATE INDEX executions_state_updated ON executions (state, updated_at);

      -- Two hash-chained journals of the same shape: one row per event of a call or
      -- execution, and one per agent-run event (session start and end).
      CREATE TABLE activity_journal (
        seq          bigint PRIMARY KEY,
        at           bigint NOT NULL,
        kind         text NOT NULL,
        execution_id text,
        actor        text,
        tool         text,
        request_ref  text,
        -- The canonical JSON text the hash covers, so a verifier hashes the bytes as stored.
        detail       text NOT NULL,
        prev_hash    text NOT NULL,
        hash         text NOT NULL
      );
      CREATE TABLE sessions_journal (LIKE activity_journal INCLUDING ALL);
      -- One execution's timeline.
      CREATE INDEX activity_journal_execution ON activity_journal (execution_id) WHERE execution_id IS NOT NULL;

      -- Each chain's end, one row per journal: appenders lock it, so writers in any
      -- number of processes extend one chain, one at a time, without gaps or forks.
      CREATE TABLE journal_head (
        stream text PRIMARY KEY CHECK (stream IN ('activity', 'sessions')),
        seq    bigint NOT NULL,
        hash   text NOT NULL,
        at     bigint NOT NULL
      );
      INSERT INTO journal_head (stream, seq, hash, at)
        VALUES ('activity', 0, '${GENESIS_HASH}', 0), ('sessions', 0, '${GENESIS_HASH}', 0);

      -- The hash chain detects tampering after the fact; these stop our own code from doing it.
      CREATE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END
      $$;
      CREATE TRIGGER activity_journal_no_change BEFORE UPDATE OR DELETE ON activity_journal
        FOR EACH ROW EXECUTE FUNCTION journal_append_only();
      CREATE TRIGGER activity_journal_no_truncate BEFORE TRUNCATE ON activity_journal
        FOR EACH STATEMENT EXECUTE FUNCTION journal_append_only();
      CREATE TRIGGER sessions_journal_no_change BEFORE UPDATE OR DELETE ON sessions_journal
        FOR EACH ROW EXECUTE FUNCTION journal_append_only();
      CREATE TRIGGER sessions_journal_no_truncate BEFORE TRUNCATE ON sessions_journal
        FOR EACH STATEMENT EXECUTE FUNCTION journal_append_only();
    `,
  },
  {
    version: 2,
    name: 'request digest of business-key executions',
    sql: `
      -- Same encoding as fingerprint. NULL outside business-key scopes, where it costs a
      -- bit in the row's null bitmap; variable width, so its place at the end costs no padding.
      ALTER TABLE executions ADD COLUMN request_digest bytea;
    `,
  },
  {
    version: 3,
    name: 'approval requests and approved sessions',
    sql: `
      -- One row per execution that waited for approval: what the approver is asked, and the
      -- decision. Trimmed with its execution.
      CREATE TABLE approval_requests (
        requested_at   bigint NOT NULL,
        expires_at     bigint NOT NULL,
        decided_at     bigint,
        execution_id   text COLLATE "C" PRIMARY KEY REFERENCES executions (id) ON DELETE CASCADE,
        policy         text NOT NULL CHECK (policy IN ('every_call', 'session')),
        channel        text NOT NULL,
        target         text NOT NULL,
        credential_ref text,
        earlier        text,
        decision       text CHECK (decision IN ('approved', 'denied', 'expired')),
        decided_by     text,
        decided_via    text,
        reason         text
      );
      -- The operator's queue: undecided requests.
      CREATE INDEX approval_requests_pending ON approval_requests (execution_id) WHERE decision IS NULL;

      -- approval: session — this actor's session may run this tool without asking again, in any gateway.
      CREATE TABLE session_approvals (
        approved_at bigint NOT NULL,
        actor       text NOT NULL,
        session     text NOT NULL,
        tool        text NOT NULL,
        PRIMARY KEY (actor, session, tool)
      );
    `,
  },
  {
    version: 4,
    name: 'a journal chain per writer, appended in SQL',
    sql: `
      -- One chain per writer (docs/postgres.md, "One chain per writer"): every
      -- store handle appends to chains of its own, so no row is locked by every
      -- gateway. Rows written before this are chain 0, which keeps its all-zero
      -- genesis and its contiguous seqs. ADD COLUMN with a constant default only
      -- changes the catalog; the default goes again so every append names its chain.
      ALTER TABLE activity_journal ADD COLUMN chain integer NOT NULL DEFAULT 0;
      ALTER TABLE activity_journal ALTER COLUMN chain DROP DEFAULT;
      ALTER TABLE sessions_journal ADD COLUMN chain integer NOT NULL DEFAULT 0;
      ALTER TABLE sessions_journal ALTER COLUMN chain DROP DEFAULT;

      -- journal_head becomes the registry of chains: each one's end, one row per
      -- (stream, chain). audit verify checks every chain reaches its registered head.
      ALTER TABLE journal_head ADD COLUMN chain integer NOT NULL DEFAULT 0;
      ALTER TABLE journal_head ALTER COLUMN chain DROP DEFAULT;
      ALTER TABLE journal_head DROP CONSTRAINT journal_head_pkey;
      ALTER TABLE journal_head ADD PRIMARY KEY (stream, chain);
      CREATE SEQUENCE journal_chains AS integer MINVALUE 1;

      -- seq: one sequence per stream, shared by every chain, so seq still orders
      -- the stream and names a row; a chain's seqs rise but skip the others'.
      CREATE SEQUENCE activity_journal_seq MINVALUE 1;
      SELECT setval('activity_journal_seq', (SELECT coalesce(max(seq), 0) + 1 FROM activity_journal), false);
      CREATE SEQUENCE sessions_journal_seq MINVALUE 1;
      SELECT setval('sessions_journal_seq', (SELECT coalesce(max(seq), 0) + 1 FROM sessions_journal), false);

      -- A new chain of each stream for a writer; its genesis is chain.ts chainGenesis, computed here.
      CREATE FUNCTION journal_register_chain() RETURNS integer LANGUAGE sql AS $$
        WITH c AS (SELECT nextval('journal_chains')::integer AS chain)
        INSERT INTO journal_head (stream, chain, seq, hash, at)
        SELECT s, c.chain, 0,
          encode(sha256(convert_to('idem-journal-chain/v1' || E'\\n' || s || E'\\n' || c.chain, 'UTF8')), 'hex'), 0
        FROM c, unnest(ARRAY['activity', 'sessions']) AS s
        RETURNING chain
      $$;

      -- Appends events to one chain in the statement that made the change, so a
      -- journaled write is one round trip and the chain's head row is locked only
      -- from here to COMMIT. The hash is chain.ts journalEntryHash:
      --   SHA-256(prev_hash ‖ "\\n" ‖ "[" ‖ seq ‖ "," ‖ at ‖ "," ‖ tail ‖ "\\n" ‖ detail)
      -- where the client sends tail (envelopeTail: the JSON of kind, execution id,
      -- actor, tool, request ref) and detail (canonical JSON), so JSON is encoded in
      -- one place; the database adds the seq and time it decides. \`at\` never goes
      -- below the chain's last, so a chain's times read in order.
      CREATE FUNCTION journal_append(p_stream text, p_chain integer, p_now bigint, p_kind text[],
        p_execution_id text[], p_actor text[], p_tool text[], p_request_ref text[], p_detail text[],
        p_tail text[]) RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        v_seq bigint;
        v_prev text;
        v_hash text;
        v_at bigint;
      BEGIN
        SELECT seq, hash, greatest(at, coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint))
          INTO v_seq, v_hash, v_at
          FROM journal_head WHERE stream = p_stream AND chain = p_chain FOR UPDATE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'journal chain % of % is not registered', p_chain, p_stream;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_kind), 0) LOOP
          v_seq := nextval((p_stream || '_journal_seq')::regclass);
          v_prev := v_hash;
          v_hash := encode(sha256(convert_to(
            v_prev || E'\\n[' || v_seq || ',' || v_at || ',' || p_tail[i] || E'\\n' || p_detail[i], 'UTF8')), 'hex');
          IF p_stream = 'activity' THEN
            INSERT INTO activity_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash,
              hash, chain)
            VALUES (v_seq, v_at, p_kind[i], p_execution_id[i], p_actor[i], p_tool[i], p_request_ref[i], p_detail[i],
              v_prev, v_hash, p_chain);
          ELSE
            INSERT INTO sessions_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash,
              hash, chain)
            VALUES (v_seq, v_at, p_kind[i], p_execution_id[i], p_actor[i], p_tool[i], p_request_ref[i], p_detail[i],
              v_prev, v_hash, p_chain);
          END IF;
        END LOOP;
        UPDATE journal_head SET seq = v_seq, hash = v_hash, at = v_at WHERE stream = p_stream AND chain = p_chain;
        RETURN v_seq;
      END
      $$;
    `,
  },
  {
    version: 5,
    name: 'tasks, and the upstream task an execution follows',
    sql: `
      -- JSON text (sql-columns.ts upstreamTaskColumn), not jsonb, as outcome: the upstream's own
      -- task, which the holder follows and another gateway may resume following. NULL (a bit
      -- in the null bitmap) for nearly every execution.
      ALTER TABLE executions ADD COLUMN upstream_task text;

      -- A client's task: a random id mapped to one execution and one actor. Fixed-width
      -- columns first, as in executions. Trimmed with its execution.
      CREATE TABLE tasks (
        created_at          bigint NOT NULL,
        ttl_ms              bigint,
        poll_interval_ms    bigint NOT NULL,
        cancel_requested_at bigint,
        -- "C": byte order, as SQLite and the memory store list them.
        task_id             text COLLATE "C" PRIMARY KEY,
        execution_id        text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
        actor               text NOT NULL,
        generation          text NOT NULL CHECK (generation IN ('v1', 'v2')),
        -- A repeat of the intent by the same actor gets the same task.
        UNIQUE (execution_id, actor)
      );
      -- tasks/list: one actor's tasks in id order.
      CREATE INDEX tasks_actor ON tasks (actor, task_id);
    `,
  },
  {
    version: 6,
    name: "a task's input, answered by any gateway",
    sql: `
      -- JSON text (sql-columns.ts taskInputColumn), not jsonb, as upstream_task: what a dispatched
      -- task's target asked for and the client's answers so far, which any gateway shows and
      -- takes, and the holder reads back. NULL for nearly every execution.
      ALTER TABLE executions ADD COLUMN task_input text;
    `,
  },
  {
    version: 7,
    name: 'journal_append moves the head without locking it first',
    sql: `
      -- Version 4's, less two costs of every journaled write (bench/NOTES.md, issue 30): the head
      -- is read without FOR UPDATE (its lock, a WAL record) and moved only if still where it was
      -- read; a chain has one writer (journal-chains.ts), so a move by another fails, never forks.
      -- And each entry's sequence is named, not looked up by its name.
      CREATE OR REPLACE FUNCTION journal_append(p_stream text, p_chain integer, p_now bigint, p_kind text[],
        p_execution_id text[], p_actor text[], p_tool text[], p_request_ref text[], p_detail text[],
        p_tail text[]) RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        v_read bigint; v_seq bigint; v_prev text; v_hash text; v_at bigint;
      BEGIN
        SELECT seq, hash, greatest(at, coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint))
          INTO v_read, v_hash, v_at FROM journal_head WHERE stream = p_stream AND chain = p_chain;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'journal chain % of % is not registered', p_chain, p_stream;
        END IF;
        v_seq := v_read;
        FOR i IN 1 .. coalesce(cardinality(p_kind), 0) LOOP
          v_seq := CASE p_stream WHEN 'activity' THEN nextval('activity_journal_seq')
            ELSE nextval('sessions_journal_seq') END;
          v_prev := v_hash;
          v_hash := encode(sha256(convert_to(
            v_prev || E'\\n[' || v_seq || ',' || v_at || ',' || p_tail[i] || E'\\n' || p_detail[i], 'UTF8')), 'hex');
          IF p_stream = 'activity' THEN
            INSERT INTO activity_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash,
              hash, chain)
            VALUES (v_seq, v_at, p_kind[i], p_execution_id[i], p_actor[i], p_tool[i], p_request_ref[i], p_detail[i],
              v_prev, v_hash, p_chain);
          ELSE
            INSERT INTO sessions_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash,
              hash, chain)
            VALUES (v_seq, v_at, p_kind[i], p_execution_id[i], p_actor[i], p_tool[i], p_request_ref[i], p_detail[i],
              v_prev, v_hash, p_chain);
          END IF;
        END LOOP;
        UPDATE journal_head SET seq = v_seq, hash = v_hash, at = v_at
          WHERE stream = p_stream AND chain = p_chain AND seq = v_read;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'journal chain % of % was moved by another writer', p_chain, p_stream;
        END IF;
        RETURN v_seq;
      END
      $$;
    `,
  },
  JOURNAL_ROWS_MIGRATION,
];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

type Queryable = Pick<pg.ClientBase, 'query'>;

/** The applied version, 0 for an empty schema. */
export async function schemaVersion(db: Queryable): Promise<number> {
  const exists = await db.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  if (exists.rows[0]?.t == null) return 0;
  const { rows } = await db.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  return rows[0]?.v ?? 0;
}

/**
 * Brings the schema (the connection's search_path, or `schema`) up to
 * SCHEMA_VERSION. Several processes may start at once on an empty database,
 * so the work happens under a transaction-scoped advisory lock and the version
 * is read again under it: the first migrates, the others find nothing to do.
 * All missing steps commit together or not at all. A newer schema than this
 * code knows is refused: writing to it could break what the newer version
 * relies on.
 */
export async function migrate(
  db: Queryable,
  options: { schema?: string; migrations?: readonly Migration[] } = {},
): Promise<number> {
  const migrations = options.migrations ?? MIGRATIONS;
  const latest = migrations.at(-1)?.version ?? 0;
  // Most opens find nothing to do; they need not queue for the lock, nor hold DDL rights.
  if (refuseNewer(await schemaVersion(db), latest) === latest) return latest;

  await db.query('BEGIN');
  try {
    await db.query(
      `SELECT pg_advisory_xact_lock(hashtext('idem.migrate'), hashtext(coalesce($1::text, current_schema(), '')))`,
      [options.schema ?? null],
    );
    if (options.schema !== undefined)
      await db.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(options.schema)}`);
    await db.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const current = refuseNewer(await schemaVersion(db), latest);
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      await db.query(migration.sql);
      await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    }
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => {});
    throw error;
  }
  return latest;
}

function refuseNewer(current: number, latest: number): number {
  if (current > latest) {
    throw new StoreUnavailableError(
      `the store's schema is version ${current}, newer than this Idem knows (${latest}); upgrade Idem to open it`,
    );
  }
  return current;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
