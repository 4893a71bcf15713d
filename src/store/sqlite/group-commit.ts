import type Database from 'better-sqlite3';

// biome-ignore lint/suspicious/noExplicitAny: a transaction's own parameters, whatever they are.
type Work = (...args: any[]) => unknown;

/**
 * Whether a write must be on disk before it returns ('sync'), or may reach it
 * with the next one that must ('lazy'): the rule is src/store/durability.ts.
 */
export type WriteSync = 'sync' | 'lazy';

interface PendingWrite {
  transaction: Database.Transaction<Work>;
  sync: WriteSync;
  args: unknown[];
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions {
  /** Throws if the store may not be written now (closed, or refused after damage); checked per write. */
  check: () => void;
  /** What a caller is given for a failure: SQLite's errors become the store's (errors.ts). */
  mapError: (error: unknown) => unknown;
  /**
   * The store's setting. 'full': a batch holding a write that must sync commits
   * with synchronous=FULL; a batch of lazy writes only with NORMAL, and is synced
   * by the next FULL commit or a checkpoint within `syncWithinMs`. 'normal':
   * every batch with NORMAL (process-crash durability only).
   */
  synchronous: 'full' | 'normal';
  /** How long a lazy commit may stay unsynced when no write that must sync follows it ('full' only). */
  syncWithinMs: number;
  /** After each batch that committed (checkpointer.ts counts them). */
  onCommit?: () => void;
}

/**
 * Group commit. better-sqlite3 is synchronous, so a commit (with
 * synchronous=FULL, an fsync of the WAL) holds the event loop; one commit per
 * write would make concurrent calls queue on the disk one by one. Instead,
 * every write asked for during one turn of the event loop is queued, and all
 * of them run at the next check phase (setImmediate) in ONE immediate
 * transaction: one commit, one fsync, for the lot. Each write runs in its own
 * savepoint (better-sqlite3 nests transactions that way), so a write that
 * fails alone is undone alone and only its caller is told; the others commit.
 *
 * Each caller's promise settles after the commit, never before: a claim is
 * answered "won" only once it is on disk. If the batch cannot commit (BEGIN
 * or COMMIT fails, or SQLite rolls the whole transaction back), every write
 * of it is rejected with that error: nothing of it was written, so the
 * engine fails each call closed (not dispatched, safe to retry).
 *
 * With 'full', only a batch holding a write that must be on disk before it
 * returns (a claim, a dispatch, a decision) waits for an fsync; a batch of
 * outcomes alone commits with NORMAL, and the connection is put back to FULL
 * right after, so whatever runs outside a batch (the sweep, lease renewals)
 * is synced as before. The WAL is one file flushed in order: the next FULL
 * commit carries every NORMAL one before it to the disk, and if none comes,
 * a PASSIVE checkpoint (which syncs the WAL first) does within syncWithinMs.
 */
export class GroupCommit {
  readonly #db: Database.Database;
  readonly #options: GroupCommitOptions;
  readonly #batch: Database.Transaction<(writes: PendingWrite[]) => unknown[]>;
  #pending: PendingWrite[] = [];
  #scheduled = false;
  /** Whether a batch may commit without a sync: only on a file, with 'full' (else every commit is NORMAL anyway). */
  readonly #splitsSync: boolean;
  /**
   * When the oldest lazy commit not yet synced was made (performance.now()), or undefined when
   * every commit is on disk. Under load the next claim syncs it within milliseconds; the timer
   * checkpoints only for a lazy commit that has waited syncWithinMs.
   */
  #unsyncedSince: number | undefined;
  #syncTimer: NodeJS.Timeout | undefined;
  /**
   * Batches run and writes in them, for the benchmark's "writes per commit";
   * `synced`: batches that committed with FULL; `checkpoints`: run to sync lazy commits.
   */
  readonly stats = { commits: 0, writes: 0, synced: 0, checkpoints: 0 };

  constructor(db: Database.Database, options: GroupCommitOptions) {
    this.#db = db;
    this.#options = options;
    this.#splitsSync = options.synchronous === 'full' && !db.memory;
    this.#batch = db.transaction((writes: PendingWrite[]) => writes.map((write) => this.#runNested(write)));
  }

  /**
   * Runs `transaction(...args)` in the next batch; settles once that batch has committed (or
   * failed), and for a 'sync' write once the commit is on disk.
   */
  run<F extends Work>(
    transaction: Database.Transaction<F>,
    sync: WriteSync,
    ...args: Parameters<F>
  ): Promise<ReturnType<F>> {
    try {
      this.#options.check();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<ReturnType<F>>((resolve, reject) => {
      this.#pending.push({
        transaction: transaction as Database.Transaction<Work>,
        sync,
        args,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits what is queued now (the scheduled turn, or close() so that nothing queued is left unsettled). */
  flush(): void {
    this.#scheduled = false;
    const writes = this.#pending;
    this.#pending = [];
    if (writes.length === 0) return;
    this.stats.commits++;
    this.stats.writes += writes.length;
    const lazy = this.#splitsSync && writes.every((write) => write.sync === 'lazy');
    if (writes.length === 1) {
      // Alone: its own transaction, no savepoint needed.
      const [write] = writes as [PendingWrite];
      let outcome: unknown;
      try {
        this.#options.check();
        outcome = this.#commit(lazy, () => write.transaction.immediate(...write.args));
      } catch (error) {
        write.reject(this.#options.mapError(error));
        return;
      }
      write.resolve(outcome);
      this.#options.onCommit?.();
      return;
    }
    let outcomes: unknown[];
    try {
      this.#options.check();
      outcomes = this.#commit(lazy, () => this.#batch.immediate(writes));
    } catch (error) {
      const mapped = this.#options.mapError(error);
      for (const write of writes) write.reject(mapped);
      return;
    }
    writes.forEach((write, i) => {
      const outcome = outcomes[i];
      if (outcome instanceof FailedWrite) write.reject(outcome.error);
      else write.resolve(outcome);
    });
    this.#options.onCommit?.();
  }

  /** Commits what is queued, then stops the timer and syncs what a lazy batch left unsynced. */
  close(): void {
    this.flush();
    clearTimeout(this.#syncTimer);
    this.#syncTimer = undefined;
    if (this.#unsyncedSince !== undefined) this.#checkpoint();
  }

  /** Runs one batch's transaction; a lazy one with NORMAL, the connection back to FULL afterwards. */
  #commit<T>(lazy: boolean, transaction: () => T): T {
    if (!lazy) {
      const result = transaction();
      if (this.#splitsSync) {
        this.stats.synced++;
        this.#unsyncedSince = undefined;
      }
      return result;
    }
    // Not a prepared statement: SQLite applies this pragma when it compiles it, not when it runs.
    this.#db.exec('PRAGMA synchronous = NORMAL');
    try {
      const result = transaction();
      this.#unsyncedSince ??= performance.now();
      this.#syncTimer ??= setTimeout(() => this.#syncLazyCommits(), this.#options.syncWithinMs).unref();
      return result;
    } finally {
      this.#db.exec('PRAGMA synchronous = FULL');
    }
  }

  /** No synced commit came after a lazy one: a PASSIVE checkpoint syncs the WAL before it copies it back. */
  #syncLazyCommits(): void {
    this.#syncTimer = undefined;
    if (this.#unsyncedSince === undefined || !this.#db.open) return;
    const waited = performance.now() - this.#unsyncedSince;
    // Younger than the bound (a synced commit came and a lazy one after it): wait for the rest.
    // Older, and the checkpoint could not finish (a reader held part of the log back, or
    // another checkpoint ran): try again, never give up silently.
    const retryIn =
      waited < this.#options.syncWithinMs
        ? this.#options.syncWithinMs - waited
        : this.#checkpoint()
          ? undefined
          : this.#options.syncWithinMs;
    if (retryIn !== undefined) this.#syncTimer = setTimeout(() => this.#syncLazyCommits(), retryIn).unref();
  }

  /** True when the whole WAL was checkpointed, so every commit in it is on disk. */
  #checkpoint(): boolean {
    try {
      this.#options.check();
    } catch {
      // Closed or refused: nothing more can be written to this file through this handle.
      return true;
    }
    try {
      const [result] = this.#db.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
      this.stats.checkpoints++;
      const done = result !== undefined && result.checkpointed === result.log;
      if (done) this.#unsyncedSince = undefined;
      return done;
    } catch {
      // An I/O error: the next attempt may succeed.
      return false;
    }
  }

  /** One write inside the batch's transaction, in a savepoint of its own. */
  #runNested(write: PendingWrite): unknown {
    try {
      this.#options.check();
      return write.transaction.immediate(...write.args);
    } catch (error) {
      // SQLite may have rolled the whole transaction back (disk full, I/O error): then the
      // writes before this one are gone too, and the batch fails as a whole.
      if (!this.#db.inTransaction) throw error;
      return new FailedWrite(this.#options.mapError(error));
    }
  }
}

/** A write of a batch that failed alone (its savepoint was rolled back); the batch goes on. */
class FailedWrite {
  constructor(readonly error: unknown) {}
}
