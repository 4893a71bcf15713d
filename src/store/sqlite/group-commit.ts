import type Database from 'better-sqlite3';

// biome-ignore lint/suspicious/noExplicitAny: a transaction's own parameters, whatever they are.
type Work = (...args: any[]) => unknown;

interface PendingWrite {
  transaction: Database.Transaction<Work>;
  args: unknown[];
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions {
  /** Throws if the store may not be written now (closed, or refused after damage); checked per write. */
  check: () => void;
  /** What a caller is given for a failure: SQLite's errors become the store's (errors.ts). */
  mapError: (error: unknown) => unknown;
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
 */
export class GroupCommit {
  readonly #db: Database.Database;
  readonly #options: GroupCommitOptions;
  readonly #batch: Database.Transaction<(writes: PendingWrite[]) => unknown[]>;
  #pending: PendingWrite[] = [];
  #scheduled = false;
  /** Batches run and writes in them, for the benchmark's "writes per commit". */
  readonly stats = { commits: 0, writes: 0 };

  constructor(db: Database.Database, options: GroupCommitOptions) {
    this.#db = db;
    this.#options = options;
    this.#batch = db.transaction((writes: PendingWrite[]) => writes.map((write) => this.#runNested(write)));
  }

  /** Runs `transaction(...args)` in the next batch; settles once that batch has committed (or failed). */
  run<F extends Work>(transaction: Database.Transaction<F>, ...args: Parameters<F>): Promise<ReturnType<F>> {
    try {
      this.#options.check();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<ReturnType<F>>((resolve, reject) => {
      this.#pending.push({
        transaction: transaction as Database.Transaction<Work>,
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
    if (writes.length === 1) {
      // Alone: its own transaction, no savepoint needed.
      const [write] = writes as [PendingWrite];
      try {
        this.#options.check();
        write.resolve(write.transaction.immediate(...write.args));
      } catch (error) {
        write.reject(this.#options.mapError(error));
      }
      return;
    }
    let outcomes: unknown[];
    try {
      this.#options.check();
      outcomes = this.#batch.immediate(writes);
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
