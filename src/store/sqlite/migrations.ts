import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../errors.js';

export interface Migration {
  /** PRAGMA user_version after this migration. Consecutive from 1. */
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
      CREATE TABLE executions (
        id                TEXT PRIMARY KEY NOT NULL,
        -- 32-byte BLOB for an 'fp_' fingerprint, the text itself for anything else.
        fingerprint       ANY NOT NULL,
        -- 1 while this execution is the one a call with its fingerprint attaches to.
        active            INTEGER NOT NULL CHECK (active IN (0, 1)),
        actor             TEXT NOT NULL,
        tool              TEXT NOT NULL,
        session           TEXT,
        replay            TEXT NOT NULL CHECK (replay IN ('read_only', 'keyed', 'status', 'review')),
        state             TEXT NOT NULL CHECK (state IN ('accepted', 'awaiting_approval', 'authorized',
                            'dispatched', 'completed', 'failed', 'unknown', 'denied')),
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL,
        attach_until      INTEGER NOT NULL,
        dispatched_at     INTEGER,
        deadline_at       INTEGER,
        claim_token       TEXT,
        lease_owner       TEXT,
        lease_expires_at  INTEGER,
        delivered_at      INTEGER,
        arguments_preview TEXT NOT NULL,
        note              TEXT,
        -- Last, so a large result spills to overflow pages without taking the small columns with it.
        outcome           TEXT
      ) STRICT;

      -- The claim: at most one active execution per fingerprint.
      CREATE UNIQUE INDEX executions_active_fingerprint ON executions (fingerprint) WHERE active = 1;
      -- The sweeper's two scans: dispatched ones, and finished ones by age.
      CREATE INDEX executions_state_updated ON executions (state, updated_at);

      CREATE TABLE activity_journal (
        seq          INTEGER PRIMARY KEY,
        at           INTEGER NOT NULL,
        kind         TEXT NOT NULL,
        execution_id TEXT,
        actor        TEXT,
        tool         TEXT,
        request_ref  TEXT,
        detail       TEXT NOT NULL,
        prev_hash    TEXT NOT NULL,
        hash         TEXT NOT NULL
      ) STRICT;

      -- The hash chain detects tampering after the fact; these stop our own code from doing it.
      CREATE TRIGGER activity_journal_no_update BEFORE UPDATE ON activity_journal
        BEGIN SELECT RAISE(ABORT, 'activity_journal is append-only'); END;
      CREATE TRIGGER activity_journal_no_delete BEFORE DELETE ON activity_journal
        BEGIN SELECT RAISE(ABORT, 'activity_journal is append-only'); END;
    `,
  },
  {
    version: 2,
    name: 'sessions journal, per-execution journal index',
    sql: `
      CREATE TABLE sessions_journal (
        seq          INTEGER PRIMARY KEY,
        at           INTEGER NOT NULL,
        kind         TEXT NOT NULL,
        execution_id TEXT,
        actor        TEXT,
        tool         TEXT,
        request_ref  TEXT,
        detail       TEXT NOT NULL,
        prev_hash    TEXT NOT NULL,
        hash         TEXT NOT NULL
      ) STRICT;
      CREATE TRIGGER sessions_journal_no_update BEFORE UPDATE ON sessions_journal
        BEGIN SELECT RAISE(ABORT, 'sessions_journal is append-only'); END;
      CREATE TRIGGER sessions_journal_no_delete BEFORE DELETE ON sessions_journal
        BEGIN SELECT RAISE(ABORT, 'sessions_journal is append-only'); END;

      -- \`idem executions show\`: one execution's timeline.
      CREATE INDEX activity_journal_execution ON activity_journal (execution_id) WHERE execution_id IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'request digest of business-key executions',
    sql: `
      -- Same encoding as fingerprint: 32 bytes for an 'fp_' digest, the text otherwise.
      -- NULL (and so nothing in the row but its header byte) outside business-key scopes.
      ALTER TABLE executions ADD COLUMN request_digest ANY;
    `,
  },
  {
    version: 4,
    name: 'approval requests and approved sessions',
    sql: `
      -- One row per execution that waited for approval: what the approver is asked, and the decision.
      CREATE TABLE approval_requests (
        execution_id   TEXT PRIMARY KEY NOT NULL,
        policy         TEXT NOT NULL CHECK (policy IN ('every_call', 'session')),
        channel        TEXT NOT NULL,
        target         TEXT NOT NULL,
        credential_ref TEXT,
        earlier        TEXT,
        requested_at   INTEGER NOT NULL,
        expires_at     INTEGER NOT NULL,
        decision       TEXT CHECK (decision IN ('approved', 'denied', 'expired')),
        decided_by     TEXT,
        decided_via    TEXT,
        decided_at     INTEGER,
        reason         TEXT
      ) STRICT;
      -- The operator's queue: undecided requests.
      CREATE INDEX approval_requests_pending ON approval_requests (execution_id) WHERE decision IS NULL;
      -- Trimmed with its execution (SQLite enforces no foreign keys unless asked per connection).
      CREATE TRIGGER executions_trim_approval AFTER DELETE ON executions
        BEGIN DELETE FROM approval_requests WHERE execution_id = OLD.id; END;

      -- approval: session — this actor's session may run this tool without asking again.
      CREATE TABLE session_approvals (
        actor        TEXT NOT NULL,
        session      TEXT NOT NULL,
        tool         TEXT NOT NULL,
        approved_at  INTEGER NOT NULL,
        PRIMARY KEY (actor, session, tool)
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 5,
    name: 'tasks, and the upstream task an execution follows',
    sql: `
      -- JSON (sql-columns.ts upstreamTaskColumn): the upstream's own task, which the holder
      -- follows and another process may resume following. NULL for nearly every execution.
      ALTER TABLE executions ADD COLUMN upstream_task TEXT;

      -- A client's task: a random id mapped to one execution and one actor.
      CREATE TABLE tasks (
        task_id             TEXT PRIMARY KEY NOT NULL,
        execution_id        TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
        actor               TEXT NOT NULL,
        generation          TEXT NOT NULL CHECK (generation IN ('v1', 'v2')),
        created_at          INTEGER NOT NULL,
        ttl_ms              INTEGER,
        poll_interval_ms    INTEGER NOT NULL,
        cancel_requested_at INTEGER,
        -- A repeat of the intent by the same actor gets the same task.
        UNIQUE (execution_id, actor)
      ) STRICT, WITHOUT ROWID;
      -- tasks/list: one actor's tasks in id order.
      CREATE INDEX tasks_actor ON tasks (actor, task_id);
      -- Trimmed with its execution: the foreign key says so, but SQLite enforces none unless
      -- asked per connection, so a trigger does it, as for approval requests.
      CREATE TRIGGER executions_trim_tasks AFTER DELETE ON executions
        BEGIN DELETE FROM tasks WHERE execution_id = OLD.id; END;
    `,
  },
  {
    version: 6,
    name: "a task's input, answered by any process",
    sql: `
      -- JSON (sql-columns.ts taskInputColumn): what a dispatched task's target asked for and the
      -- client's answers so far, which any process shows and takes, and the holder reads back.
      -- NULL for nearly every execution.
      ALTER TABLE executions ADD COLUMN task_input TEXT;
    `,
  },
  {
    version: 7,
    name: "an execution's journal entries named on its row, not by an index",
    sql: `
      -- The seqs of the execution's activity journal entries, comma-separated, in order: written
      -- by the transaction that writes the row anyway, so the timeline costs no page of its own
      -- in the WAL (the index on activity_journal.execution_id cost one per transaction).
      ALTER TABLE executions ADD COLUMN journal_seqs TEXT;

      -- The entries no row names: those of executions that are gone (trimmed), of ids that never
      -- had a row, and every entry journaled before this version.
      CREATE TABLE journal_refs (
        execution_id TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        PRIMARY KEY (execution_id, seq)
      ) STRICT, WITHOUT ROWID;
      -- Read from the index in its order, which is journal_refs's: appended, not inserted at random.
      INSERT INTO journal_refs (execution_id, seq)
        SELECT execution_id, seq FROM activity_journal INDEXED BY activity_journal_execution
        WHERE execution_id IS NOT NULL ORDER BY execution_id, seq;
      DROP INDEX activity_journal_execution;

      -- A trimmed execution's timeline stays readable (\`idem executions show\`).
      CREATE TRIGGER executions_keep_journal_refs AFTER DELETE ON executions
        WHEN OLD.journal_seqs IS NOT NULL
        BEGIN
          INSERT OR IGNORE INTO journal_refs (execution_id, seq)
            SELECT OLD.id, value FROM json_each('[' || OLD.journal_seqs || ']');
        END;
    `,
  },
  {
    version: 8,
    name: 'a state index over unfinished executions only',
    sql: `
      -- Every row sat in the (state, updated_at) index, so every call moved its entry twice
      -- (dispatched, then completed): a page in the WAL for each. What reads it by state looks
      -- for unfinished rows (the sweep's expiry, the gauges of unknown and awaiting_approval);
      -- a finished row leaves this index, and a trim finds finished rows by rowid range
      -- (sql.ts trimBoundary). The list of states is sql.ts UNFINISHED_ROWS, term for term.
      DROP INDEX executions_state_updated;
      CREATE INDEX executions_unfinished ON executions (state, updated_at)
        WHERE state IN ('accepted', 'awaiting_approval', 'authorized', 'dispatched', 'unknown');
    `,
  },
  {
    version: 9,
    name: 'one journal row per transaction',
    sql: `
      -- A row from now on carries a whole transaction's events (docs/adr/0052): \`events\` is how
      -- many, \`detail\` their RFC 8785 text, \`seq\` the last one's, kind '' and the rest of the
      -- envelope NULL (each event carries its own). NULL on every row written before: those hold
      -- one event each and keep verifying as they were hashed. Nothing is rewritten.
      ALTER TABLE activity_journal ADD COLUMN events INTEGER CHECK (events >= 1);
      ALTER TABLE sessions_journal ADD COLUMN events INTEGER CHECK (events >= 1);
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Brings the schema up to SCHEMA_VERSION. Several processes may open a new
 * file at once, so the version is read again under the write lock and each
 * process applies only what is still missing. A newer file than this code
 * knows is refused: writing to it could break what the newer version relies on.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const latest = migrations.at(-1)?.version ?? 0;
  const apply = db.transaction(() => {
    const current = refuseNewer(schemaVersion(db), latest);
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }
    return schemaVersion(db);
  });
  // Most opens find nothing to do; they need not queue for the write lock.
  if (refuseNewer(schemaVersion(db), latest) === latest) return latest;
  return apply.immediate();
}

function refuseNewer(current: number, latest: number): number {
  if (current > latest) {
    throw new StoreUnavailableError(
      `the store's schema is version ${current}, newer than this Idem knows (${latest}); upgrade Idem to open it`,
    );
  }
  return current;
}
