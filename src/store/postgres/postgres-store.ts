// The ExecutionStore interface for PostgreSQL: one method per operation, over what lives beside
// it — the writes (execution-writes.ts, approval-decision.ts, tasks.ts, sweep.ts), the journal
// chains (journal-chains.ts), SQL (sql.ts, approval-sql.ts, task-sql.ts), transactions (transactions.ts) and error
// classification (errors.ts). The same shape as the SQLite store.
import { messageOf, StoreUnavailableError } from '../../errors.js';
import { postgresFingerprint } from '../../identity/fingerprint-columns.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../../journal/events.js';
import type { ExecutionState } from '../../journal/states.js';
import { type ApprovalColumns, approvalFromColumns, entriesFromColumns } from '../sql-columns.js';
import type {
  ApprovalFilter,
  ApprovalRequest,
  ClaimInput,
  ClaimOptions,
  ClaimResult,
  DecideApprovalInput,
  DecideApprovalResult,
  ExecutionCountFilter,
  ExecutionFilter,
  ExecutionRecord,
  ExecutionStore,
  OpenTaskInput,
  StateCount,
  SweepResult,
  TaskInput,
  TaskInputRequest,
  TaskRecord,
  TaskWatch,
  TransitionInput,
  UpstreamTaskHandle,
} from '../types.js';
import { writeDecision } from './approval-decision.js';
import { APPROVAL_SQL } from './approval-sql.js';
import { connectionConfig, MIGRATION_TIMEOUT_MS, poolConfig } from './connection.js';
import { pgDriver } from './driver.js';
import { ignore, toStoreError } from './errors.js';
import { countParams, countsOf, LIST_SQL, listParams } from './execution-list.js';
import { writeClaim, writeTransition } from './execution-writes.js';
import { JournalChains } from './journal-chains.js';
import { migrate } from './migrations.js';
import { POSTGRES_DEFAULTS, type PostgresStoreOptions } from './options.js';
import { bytesPerExecutionRow, type PostgresRowBytes } from './row-bytes.js';
import { type ExecutionRow, type JournalRow, SQL, toRecord, wholeMs } from './sql.js';
import { writeSweep } from './sweep.js';
import {
  addTaskInput,
  findTask,
  listTasks,
  readTask,
  watchTask,
  writeOpenTask,
  writeTaskAnswers,
  writeTaskCancel,
  writeTaskInput,
  writeUpstreamTask,
} from './tasks.js';
import { Connections, query } from './transactions.js';

export { POSTGRES_DEFAULTS, type PostgresStoreOptions } from './options.js';

/**
 * Several gateway processes (or hosts) sharing one PostgreSQL database.
 *
 * The claim is one INSERT … ON CONFLICT DO NOTHING against a partial unique
 * index: of any number of concurrent claims, in any number of processes, the
 * database lets exactly one insert. A write and the journal entries that
 * describe it are one statement: the database hashes the entries onto a chain
 * of this handle's own (journal_append, migrations v4), so a journaled claim is
 * one round trip, and no row is locked by every gateway. Each write in flight
 * holds one of the handle's chains; there are as many as writes were ever in
 * flight at once (docs/postgres.md, "One chain per writer").
 */
export class PostgresStore implements ExecutionStore {
  readonly kind = 'postgres' as const;
  readonly #db: Connections;
  /** This handle's journal chains: each write in flight with events holds one. */
  readonly #chains: JournalChains;

  /**
   * Connects, brings the schema up to date and returns the store; StoreUnavailableError if it
   * cannot, MissingPackageError if pg is not installed.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pg = await pgDriver();
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
    return new PostgresStore(options, new Connections(pg, poolConfig(pg, options, connection)));
  }

  private constructor(options: PostgresStoreOptions, connections: Connections) {
    this.#db = connections;
    // As many chains as writes can run at once: the pool's size.
    this.#chains = new JournalChains(this.#db, options.pool?.max ?? POSTGRES_DEFAULTS.poolMax);
  }

  async claim(input: ClaimInput, options: ClaimOptions = {}): Promise<ClaimResult> {
    return writeClaim(this.#db, this.#chains, input, options);
  }

  /** Shared by every gateway of a fleet: an answer never leaves before its outcome is written. */
  soleReader(): boolean {
    return false;
  }

  async transition(t: TransitionInput): Promise<ExecutionRecord | undefined> {
    return writeTransition(this.#db, this.#chains, t);
  }

  async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    return this.#db.use(
      async (db) => (await query(SQL.renewLease, [id, token, wholeMs(leaseMs)])(db)).rowCount === 1,
    );
  }

  async markDelivered(id: string, events: ActivityEventInput[] = []): Promise<void> {
    await this.#chains.withEvents(events, (journal) =>
      this.#db.use((db) => query(SQL.markDelivered, [events.length > 0, id, ...journal])(db)),
    );
  }

  async get(id: string): Promise<ExecutionRecord | undefined> {
    return this.#db.use(async (db) => {
      const [row] = (await query<ExecutionRow>(SQL.get, [id])(db)).rows;
      return row && toRecord(row);
    });
  }

  async findActive(fingerprint: string): Promise<ExecutionRecord | undefined> {
    return this.#db.use(async (db) => {
      const [row] = (await query<ExecutionRow>(SQL.findActive, [postgresFingerprint.encode(fingerprint)])(db))
        .rows;
      return row && toRecord(row);
    });
  }

  async list(filter: ExecutionFilter = {}): Promise<ExecutionRecord[]> {
    return this.#db.use(async (db) => {
      const { rows } = await db.query<ExecutionRow>(LIST_SQL.list, listParams(filter));
      return rows.map(toRecord);
    });
  }

  async countByState(filter: ExecutionCountFilter = {}): Promise<Record<ExecutionState, number>> {
    return this.#db.use(async (db) => {
      const { rows } = await db.query<{ state: ExecutionState; n: number }>(
        LIST_SQL.counts,
        countParams(filter),
      );
      return countsOf(rows);
    });
  }

  async appendEvents(events: ActivityEventInput[], stream: JournalStream = 'activity'): Promise<void> {
    if (events.length === 0) return;
    await this.#chains.withEvents(events, (journal) =>
      this.#db.use((db) => query(SQL.append.lazy, [stream, ...journal])(db)),
    );
  }

  async readJournal(
    afterSeq = 0,
    limit = 1000,
    stream: JournalStream = 'activity',
  ): Promise<ActivityEntry[]> {
    return this.#db.use(async (db) =>
      // Rows whose last event is after afterSeq (a row of several may begin at or before it), unfolded.
      (await query<JournalRow>(SQL.journal[stream].read, [afterSeq, limit])(db)).rows
        .flatMap(entriesFromColumns)
        .filter((e) => e.seq > afterSeq)
        .slice(0, limit),
    );
  }

  async journalHead(stream: JournalStream = 'activity'): Promise<{ seq: number; hash: string } | undefined> {
    return this.#db.use(async (db) => {
      const [head] = (await query<{ seq: number; hash: string }>(SQL.journalHead, [stream])(db)).rows;
      // Registered chains start at seq 0, the empty chain.
      return head && head.seq > 0 ? { seq: head.seq, hash: head.hash } : undefined;
    });
  }

  async journalChains(
    stream: JournalStream = 'activity',
  ): Promise<{ chain: number; seq: number; hash: string }[]> {
    return this.#db.use(
      async (db) =>
        (await query<{ chain: number; seq: number; hash: string }>(SQL.journalChains, [stream])(db)).rows,
    );
  }

  async journalFor(executionId: string): Promise<ActivityEntry[]> {
    return this.#db.use(async (db) =>
      (await query<JournalRow>(SQL.journalFor, [executionId])(db)).rows
        .flatMap(entriesFromColumns)
        .filter((e) => e.executionId === executionId),
    );
  }

  async sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult> {
    return writeSweep(this.#db, this.#chains, options);
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    return this.#db.use(async (db) => {
      const [row] = (await query<ApprovalColumns>(APPROVAL_SQL.get, [id])(db)).rows;
      return row && approvalFromColumns(row);
    });
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRequest[]> {
    return this.#db.use(async (db) =>
      (
        await query<ApprovalColumns>(APPROVAL_SQL.list, [filter.pending === true, filter.limit ?? 100])(db)
      ).rows.map(approvalFromColumns),
    );
  }

  async decideApproval(input: DecideApprovalInput): Promise<DecideApprovalResult> {
    return writeDecision(this.#db, this.#chains, input);
  }

  async sessionApproved(actor: string, session: string, tool: string): Promise<boolean> {
    return this.#db.use(
      async (db) =>
        ((await query(APPROVAL_SQL.sessionApproved, [actor, session, tool])(db)).rowCount ?? 0) > 0,
    );
  }

  async openTask(input: OpenTaskInput, events?: ActivityEventInput[]): Promise<TaskRecord> {
    return writeOpenTask(this.#db, this.#chains, input, events);
  }

  async getTask(taskId: string): Promise<{ task: TaskRecord; record: ExecutionRecord } | undefined> {
    return readTask(this.#db, taskId);
  }

  async findTask(executionId: string, actor: string): Promise<TaskRecord | undefined> {
    return findTask(this.#db, executionId, actor);
  }

  async listTasks(actor: string, page: { after?: string; limit: number }): Promise<TaskRecord[]> {
    return listTasks(this.#db, actor, page);
  }

  async requestTaskCancel(taskId: string, events?: ActivityEventInput[]): Promise<TaskRecord | undefined> {
    return writeTaskCancel(this.#db, this.#chains, taskId, events);
  }

  async setUpstreamTask(
    id: string,
    token: string,
    handle: UpstreamTaskHandle,
    events?: ActivityEventInput[],
  ): Promise<boolean> {
    return writeUpstreamTask(this.#db, this.#chains, { id, token, handle, ...(events ? { events } : {}) });
  }

  async setTaskInput(
    id: string,
    token: string,
    requests: Record<string, TaskInputRequest> | null,
    events?: ActivityEventInput[],
  ): Promise<boolean> {
    return writeTaskInput(this.#db, this.#chains, { id, token, requests, ...(events ? { events } : {}) });
  }

  async addTaskInput(
    id: string,
    token: string,
    requests: Record<string, TaskInputRequest>,
    events?: ActivityEventInput[],
  ): Promise<boolean> {
    return addTaskInput(this.#db, this.#chains, { id, token, requests, ...(events ? { events } : {}) });
  }

  async answerTaskInput(
    id: string,
    answers: Record<string, unknown>,
    events?: ActivityEventInput[],
  ): Promise<TaskInput | undefined> {
    return writeTaskAnswers(this.#db, this.#chains, { id, answers, ...(events ? { events } : {}) });
  }

  async watchTask(id: string): Promise<TaskWatch | undefined> {
    return watchTask(this.#db, id);
  }

  async countStates(states: readonly ExecutionState[]): Promise<{ counts: StateCount[]; readAt: number }> {
    type Row = { read_at: number; state: ExecutionState | null; n: number; oldest: number | null };
    const { rows } = await this.#db.use(query<Row>(SQL.countStates, [states]));
    const counts = rows.flatMap(({ state, n, oldest }) =>
      state === null ? [] : [{ state, count: n, oldestUpdatedAt: oldest }],
    );
    return { counts, readAt: rows[0]!.read_at };
  }
  async now(): Promise<number> {
    return this.#db.use(async (db) => (await query<{ now: number }>(SQL.now, [])(db)).rows[0]!.now);
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  /** Bytes one execution row takes without its outcome, as PostgreSQL counts them (see row-bytes.ts). */
  async measureRowBytes(): Promise<PostgresRowBytes> {
    return this.#db.connection((client) => bytesPerExecutionRow(client));
  }
}
