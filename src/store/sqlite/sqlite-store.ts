// The ExecutionStore interface for SQLite: one method per operation, over what lives beside
// it — the write transactions (execution-writes.ts, approval-decision.ts, tasks.ts, sweep.ts,
// journal-append.ts), SQL (sql.ts, approval-sql.ts, task-sql.ts), schema (migrations.ts), group commit
// (group-commit.ts), checkpointer (checkpointer.ts), errors and integrity checks.
import { closeSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { StoreRefusedError, StoreUnavailableError } from '../../errors.js';
import { sqliteFingerprint } from '../../identity/fingerprint-columns.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../../journal/events.js';
import type { ExecutionState } from '../../journal/states.js';
import { OUTCOME_SYNC_WITHIN_MS, OUTCOME_WRITE_WITHIN_MS, transitionMustSync } from '../durability.js';
import { approvalFromColumns } from '../sql-columns.js';
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
  SweepResult,
  TaskRecord,
  TransitionInput,
} from '../types.js';
import { writeDecision } from './approval-decision.js';
import { type ApprovalStatements, prepareApprovalStatements } from './approval-sql.js';
import { Checkpointer, type CheckpointStats } from './checkpointer.js';
import { toStoreError } from './errors.js';
import { countByState, type ListStatements, listParams, prepareListStatements } from './execution-list.js';
import { writeClaim, writeTransition } from './execution-writes.js';
import { FileSharing, writeAheadLogExists } from './file-sharing.js';
import { GroupCommit } from './group-commit.js';
import { checkIntegrity, undecodableValue } from './integrity.js';
import { appendJournal } from './journal-append.js';
import { journalEntriesFor, readJournalEntries } from './journal-read.js';
import { migrate } from './migrations.js';
import { openFailure } from './open-failure.js';
import {
  DEFAULT_BUSY_TIMEOUT_MS,
  isFile,
  type SqliteStoreOptions,
  type SqliteSynchronous,
  synchronousOf,
} from './options.js';
import { StoreRefusal } from './refusal.js';
import { bytesPerExecutionRow, type RowBytes } from './row-bytes.js';
import { type ExecutionRow, prepareStatements, stateCount, toRecord, wholeMs } from './sql.js';
import { writeSweep } from './sweep.js';
import { prepareTaskStatements, type TaskStatements } from './task-sql.js';
import { findTask, listTasks, readTask, taskTransactions, watchTask } from './tasks.js';
import { WalSync } from './wal-sync.js';

/**
 * The embedded store: one SQLite file in WAL mode, shared safely by several
 * processes on one host. Every write is one IMMEDIATE transaction, so a
 * writer takes the file's write lock before it reads what it will decide on,
 * and the journal entries of a change commit with it or not at all.
 */
export class SqliteStore implements ExecutionStore {
  readonly kind = 'sqlite' as const;
  readonly #db: Database.Database;
  readonly #clock: () => number;
  readonly #sql;
  readonly #approvalSql: ApprovalStatements;
  readonly #taskSql: TaskStatements;
  readonly #listSql: ListStatements;
  readonly #claim;
  readonly #decideApproval;
  readonly #transition;
  readonly #markDelivered;
  readonly #appendEvents;
  readonly #sweep;
  readonly #tasks;
  /** Claims, transitions and journal appends: queued and committed together (group-commit.ts). */
  readonly #writes: GroupCommit;
  /** 'full': writes that let an action go ahead are synced before they return (group-commit.ts). */
  readonly #synchronous: SqliteSynchronous;
  /** Syncs the WAL for group commit, with 'full' on a file. */
  readonly #walSync: WalSync | undefined;
  /** Copies the WAL back into the file from a worker thread, off the event loop (checkpointer.ts). */
  readonly #checkpointer: Checkpointer;
  /** Set by close() while it finishes the last writes and stops the worker: from then on, every call is refused. */
  #closing: Promise<void> | undefined;
  /** Damage met, a failed sync, the file changed under it (refusal.ts): from then on, every call is refused. */
  readonly #refusal: StoreRefusal;
  readonly #sharing: FileSharing;

  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    let db: Database.Database | undefined;
    try {
      // Created here rather than by SQLite so it is never readable by others, not even briefly;
      // SQLite gives the -wal and -shm files the same mode.
      if (isFile(options.path)) closeSync(openSync(options.path, 'a', 0o600));
      const logExisted = writeAheadLogExists(options.path);
      db = new Database(options.path);
      return new SqliteStore(db, options, logExisted);
    } catch (error) {
      db?.close();
      throw openFailure(error, options.path);
    }
  }

  /** Takes ownership of `db`: configures it, migrates it, closes it on close(). `logExisted`: file-sharing.ts. */
  constructor(
    db: Database.Database,
    options: Omit<SqliteStoreOptions, 'path'> = {},
    logExisted = !db.memory,
  ) {
    this.#db = db;
    const clock = options.clock ?? Date.now;
    this.#clock = () => wholeMs(clock());
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)}`);
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (!db.memory && mode !== 'wal') {
      throw new StoreUnavailableError(`SQLite refused WAL mode (got ${mode})`);
    }
    // The connection commits with NORMAL: a commit writes the WAL and does not wait for the
    // disk. With 'full' (the default), group commit then syncs the WAL itself (wal-sync.ts)
    // before a claim (or any write that lets something go ahead) returns: on disk before
    // dispatch, as with SQLite's FULL (group-commit.ts, durability.ts). With 'normal'
    // nothing more: a power cut can lose the last commits (never corrupt the file).
    const synchronous = synchronousOf(options);
    this.#synchronous = synchronous;
    db.pragma('synchronous = NORMAL');
    // Before migrating: a damaged file is refused, never written to.
    checkIntegrity(db);
    migrate(db);

    this.#sql = prepareStatements(db);
    this.#approvalSql = prepareApprovalStatements(db);
    this.#taskSql = prepareTaskStatements(db);
    this.#listSql = prepareListStatements(db);
    this.#decideApproval = db.transaction((input: DecideApprovalInput) =>
      writeDecision(this.#sql, this.#approvalSql, this.#clock(), input),
    );
    this.#claim = db.transaction((input: ClaimInput, options: ClaimOptions) => {
      this.#sharing.look();
      return writeClaim(this.#sql, this.#approvalSql, this.#clock(), input, options);
    });
    // The time of asking, not of the batch's commit: a held outcome keeps the moment its answer left.
    this.#transition = db.transaction((t: TransitionInput, at: number) => writeTransition(this.#sql, at, t));
    this.#markDelivered = db.transaction((id: string, events?: ActivityEventInput[]) => {
      const now = this.#clock();
      if (this.#sql.markDelivered.run({ id, now }).changes === 1) appendJournal(this.#sql, events, now);
    });
    this.#appendEvents = db.transaction((events: ActivityEventInput[], stream: JournalStream) =>
      appendJournal(this.#sql, events, this.#clock(), stream),
    );
    this.#sweep = db.transaction((retentionMs: number, dryRun: boolean) =>
      writeSweep(this.#sql, this.#approvalSql, this.#clock(), retentionMs, dryRun),
    );
    this.#tasks = taskTransactions(db, this.#sql, this.#taskSql, this.#clock);
    this.#walSync = synchronous === 'full' && !db.memory ? new WalSync(db.name) : undefined;
    const walSync = this.#walSync;
    this.#checkpointer = new Checkpointer(db, options.checkpoints);
    this.#refusal = new StoreRefusal(db);
    this.#sharing = new FileSharing(db, logExisted);
    this.#writes = new GroupCommit(db, {
      check: () => this.#checkUsable(),
      beforeBatch: () => this.#refusal.checkFile(),
      mapError: (error) => this.#mapError(error),
      ...(walSync ? { syncLog: async () => walSync.sync() } : {}),
      syncFailed: (error) => this.#refusal.syncFailed(error),
      syncWithinMs: OUTCOME_SYNC_WITHIN_MS,
      deferWithinMs: OUTCOME_WRITE_WITHIN_MS,
      onCommit: () => this.#checkpointer.noteCommit(),
    });
  }

  async claim(input: ClaimInput, options: ClaimOptions = {}): Promise<ClaimResult> {
    return this.#writes.run(this.#claim, 'sync', input, options);
  }

  soleReader(): boolean {
    return !this.#sharing.shared;
  }

  async transition(input: TransitionInput): Promise<ExecutionRecord | undefined> {
    const sync = transitionMustSync(input) ? 'sync' : input.deferrable ? 'deferred' : 'lazy';
    return this.#writes.run(this.#transition, sync, input, this.#clock());
  }

  async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    const renewed = this.#guard(
      () =>
        this.#sql.renewLease.run({ id, token, leaseMs: wholeMs(leaseMs), now: this.#clock() }).changes === 1,
    );
    // Lost in a power cut, a lease is only shorter: it need not wait for the disk.
    this.#writes.noteUnsynced();
    return renewed;
  }

  async markDelivered(id: string, events?: ActivityEventInput[]): Promise<void> {
    await this.#writes.run(this.#markDelivered, 'lazy', id, events);
  }

  async get(id: string): Promise<ExecutionRecord | undefined> {
    return this.#guard(() => this.#view(this.#sql.get.get(id)));
  }

  async findActive(fingerprint: string): Promise<ExecutionRecord | undefined> {
    return this.#guard(() => this.#view(this.#sql.findActive.get(sqliteFingerprint.encode(fingerprint))));
  }

  async list(filter: ExecutionFilter = {}): Promise<ExecutionRecord[]> {
    return this.#guard(() => {
      const rows = this.#listSql.list.all(listParams(filter));
      const now = this.#clock();
      return rows.map((row) => toRecord(row, now));
    });
  }

  async countByState(filter: ExecutionCountFilter = {}): Promise<Record<ExecutionState, number>> {
    return this.#guard(() => countByState(this.#listSql, filter));
  }

  async appendEvents(events: ActivityEventInput[], stream: JournalStream = 'activity'): Promise<void> {
    if (events.length === 0) return;
    await this.#writes.run(this.#appendEvents, 'lazy', events, stream);
  }

  async readJournal(
    afterSeq = 0,
    limit = 1000,
    stream: JournalStream = 'activity',
  ): Promise<ActivityEntry[]> {
    return this.#guard(() => readJournalEntries(this.#sql, stream, afterSeq, limit));
  }

  async journalHead(stream: JournalStream = 'activity'): Promise<{ seq: number; hash: string } | undefined> {
    return this.#guard(() => this.#sql.journal[stream].head.get());
  }

  async journalFor(executionId: string): Promise<ActivityEntry[]> {
    return this.#guard(() => journalEntriesFor(this.#sql, executionId));
  }

  async sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult> {
    const swept = this.#guard(() => this.#sweep.immediate(options.retentionMs, options.dryRun ?? false));
    // Its expiries are decisions no dispatch holder made (durability.ts): on disk before they are reported.
    if (!options.dryRun) {
      await this.#writes.syncNow().catch((error: unknown) => {
        throw this.#refusal.syncFailed(error);
      });
    }
    return swept;
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    return this.#guard(() => {
      const row = this.#approvalSql.get.get(id);
      return row && approvalFromColumns(row);
    });
  }
  readonly countStates: ExecutionStore['countStates'] = async (states) =>
    this.#guard(() => ({ counts: states.map((s) => stateCount(this.#sql, s)), readAt: this.#clock() }));

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRequest[]> {
    return this.#guard(() =>
      this.#approvalSql.list
        .all({ pending: filter.pending ? 1 : 0, limit: filter.limit ?? 100 })
        .map(approvalFromColumns),
    );
  }

  async decideApproval(input: DecideApprovalInput): Promise<DecideApprovalResult> {
    return this.#writes.run(this.#decideApproval, 'sync', input);
  }

  async sessionApproved(actor: string, session: string, tool: string): Promise<boolean> {
    return this.#guard(() => this.#approvalSql.sessionApproved.get(actor, session, tool) !== undefined);
  }

  // Task writes sync: a task's existence and its cancel are what the client is told, and the
  // upstream's task is what a restarted gateway resumes following.
  async openTask(input: OpenTaskInput, events?: ActivityEventInput[]): Promise<TaskRecord> {
    return this.#writes.run(this.#tasks.open, 'sync', input, events);
  }

  async getTask(taskId: string): Promise<{ task: TaskRecord; record: ExecutionRecord } | undefined> {
    return this.#guard(() => readTask(this.#taskSql, this.#clock(), taskId));
  }

  async findTask(executionId: string, actor: string): Promise<TaskRecord | undefined> {
    return this.#guard(() => findTask(this.#taskSql, executionId, actor));
  }

  async listTasks(actor: string, page: { after?: string; limit: number }): Promise<TaskRecord[]> {
    return this.#guard(() => listTasks(this.#taskSql, actor, page));
  }

  async requestTaskCancel(taskId: string, events?: ActivityEventInput[]): Promise<TaskRecord | undefined> {
    return this.#writes.run(this.#tasks.requestCancel, 'sync', taskId, events);
  }

  readonly setUpstreamTask: ExecutionStore['setUpstreamTask'] = (id, token, handle, events) =>
    this.#writes.run(this.#tasks.setUpstreamTask, 'sync', { id, token, handle, events });

  // A task's input, answered by any process (task-watch.ts); writes sync, as every task write.
  readonly setTaskInput: ExecutionStore['setTaskInput'] = (id, token, requests, events) =>
    this.#writes.run(this.#tasks.setTaskInput, 'sync', { id, token, requests, events });
  readonly addTaskInput: ExecutionStore['addTaskInput'] = (id, token, requests, events) =>
    this.#writes.run(this.#tasks.addTaskInput, 'sync', { id, token, requests, events });
  readonly answerTaskInput: ExecutionStore['answerTaskInput'] = (id, answers, events) =>
    this.#writes.run(this.#tasks.answerTaskInput, 'sync', { id, answers, events });
  readonly watchTask: ExecutionStore['watchTask'] = async (id) =>
    this.#guard(() => watchTask(this.#taskSql, id));

  async now(): Promise<number> {
    return this.#clock();
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    if (!this.#db.open) return Promise.resolve();
    // First, so that the last commits below cannot start a worker now.
    const workerEnded = this.#checkpointer.stop();
    this.#closing = (async () => {
      // Writes still queued commit first (synchronously, before #closing is set and refuses
      // every new call) and their syncs finish: every caller is answered, none is dropped
      // unsettled, and nothing committed is left off the disk.
      await this.#writes.close();
      this.#walSync?.close();
      // The worker's connection closes before the store's, so the store's stays the last one and
      // cleans up the WAL on close as it would without a worker.
      await workerEnded;
      this.#db.close();
      this.#refusal.close();
    })();
    return this.#closing;
  }

  /**
   * Transactions committed through group commit, the writes they held, the syncs of the WAL
   * made for them, and those the timer made for lazy commits nothing else synced (since open).
   */
  commitStats(): { commits: number; writes: number; synced: number; timerSyncs: number } {
    return { ...this.#writes.stats };
  }

  /**
   * The checkpoint worker (checkpointer.ts): its state and the checkpoints it ran, and the
   * store connection's `PRAGMA wal_autocheckpoint` (the backstop while the worker runs).
   */
  checkpointStats(): CheckpointStats & { autocheckpointPages: number } {
    const autocheckpointPages = this.#guard(
      () => this.#db.pragma('wal_autocheckpoint', { simple: true }) as number,
    );
    return { ...this.#checkpointer.stats(), autocheckpointPages };
  }

  /**
   * The durability this store gives: 'full', a claim is on disk before it returns (the WAL
   * synced by group commit); 'normal', it survives a process crash only. The connection's own
   * `PRAGMA synchronous` is NORMAL either way.
   */
  synchronous(): SqliteSynchronous {
    return this.#synchronous;
  }

  /** Bytes one execution row takes without its outcome (see row-bytes.ts). */
  measureRowBytes(): RowBytes {
    return this.#guard(() => bytesPerExecutionRow(this.#db));
  }

  #view(row: ExecutionRow | undefined): ExecutionRecord | undefined {
    return row && toRecord(row, this.#clock());
  }

  /** SQLite failures that mean "cannot read or write now" become StoreUnavailableError: the engine fails closed. */
  #guard<T>(work: () => T): T {
    this.#checkUsable();
    // A write held to share the next one's commit (group-commit.ts) is committed before any read.
    this.#writes.commitHeld();
    try {
      return work();
    } catch (error) {
      throw this.#mapError(error);
    }
  }

  #checkUsable(): void {
    if (!this.#db.open || this.#closing) throw new StoreUnavailableError('the SQLite store is closed');
    this.#refusal.check();
  }

  #mapError(error: unknown): unknown {
    if (error instanceof StoreUnavailableError || error instanceof StoreRefusedError) return error;
    // Only stored JSON is parsed in here: a SyntaxError is a damaged value, not a bug.
    if (error instanceof SyntaxError) return undecodableValue(error, this.#db.name);
    const mapped = toStoreError(error, this.#db.name);
    this.#refusal.met(mapped);
    return mapped;
  }
}
