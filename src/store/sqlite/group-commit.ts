import type Database from 'better-sqlite3';
import type { WriteSync } from '../durability.js';

// biome-ignore lint/suspicious/noExplicitAny: a transaction's own parameters, whatever they are.
type Work = (...args: any[]) => unknown;

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
  /** Throws if the batch may not be committed (the file changed under the store: file-watch.ts); once per batch. */
  beforeBatch?: () => void;
  /** What a caller is given for a failure: SQLite's errors become the store's (errors.ts). */
  mapError: (error: unknown) => unknown;
  /**
   * Puts every commit made so far on disk (an fdatasync of the WAL: wal-sync.ts). Given for
   * the durable default on a file; without it nothing is synced here (synchronous 'normal',
   * or ':memory:'). A promise, so that a sync off the event loop stays possible.
   */
  syncLog?: () => Promise<void>;
  /** What a 'sync' write's caller is given when its commit could not be put on disk. */
  syncFailed: (error: unknown) => unknown;
  /** How long a lazy commit may stay unsynced when no write that must sync follows it. */
  syncWithinMs: number;
  /**
   * How long a 'deferred' write may wait for a batch to join before one is run for it alone
   * (durability.ts OUTCOME_WRITE_WITHIN_MS).
   */
  deferWithinMs?: number;
  /** After each batch that committed (checkpointer.ts counts them). */
  onCommit?: () => void;
}

/**
 * Group commit. better-sqlite3 is synchronous, so every statement holds the
 * event loop; one transaction per write would make concurrent calls queue one
 * by one. Instead, every write asked for during one turn of the event loop is
 * queued, and all of them run at the next check phase (setImmediate) in ONE
 * immediate transaction. Each write runs in its own savepoint (better-sqlite3
 * nests transactions that way), so a write that fails alone is undone alone
 * and only its caller is told; the others commit.
 *
 * Durability. The connection commits with synchronous=NORMAL: the commit
 * writes the batch's frames to the WAL and returns without waiting for the
 * disk. When the batch holds a write that must be on disk before it returns
 * (a claim, a dispatch, a decision: durability.ts), the WAL is then synced
 * (syncLog), and only after that does any caller of the batch hear back: a
 * claim is answered "won" only once it is on disk, as with synchronous=FULL.
 * The WAL is one file written in order, so one sync carries every commit
 * before it; a batch of outcomes alone is not synced, and rides on the next
 * sync, or on the one the timer makes within syncWithinMs if none comes.
 *
 * If the batch cannot commit (BEGIN or COMMIT fails, or SQLite rolls the
 * whole transaction back), every write of it is rejected with that error:
 * nothing of it was written, so the engine fails each call closed (not
 * dispatched, safe to retry). If the sync fails, the writes waiting for it are
 * rejected as well (syncFailed): on disk or not, nothing was dispatched.
 */
export class GroupCommit {
  readonly #db: Database.Database;
  readonly #options: GroupCommitOptions;
  readonly #batch: Database.Transaction<(writes: PendingWrite[]) => unknown[]>;
  #pending: PendingWrite[] = [];
  #scheduled = false;
  /** Armed while only deferred writes are queued: runs their batch if no other write comes. */
  #deferTimer: NodeJS.Timeout | undefined;
  /** Syncs started and not yet settled: close() waits for them. */
  readonly #syncing = new Set<Promise<void>>();
  /**
   * When the oldest commit no sync has covered yet was made (performance.now()), or undefined
   * when every commit is on disk (or nothing is synced here). Under load the next claim's sync
   * covers it within milliseconds; the timer syncs only for one that has waited syncWithinMs.
   */
  #unsyncedSince: number | undefined;
  #syncTimer: NodeJS.Timeout | undefined;
  /** Set by close(): no timer is armed any more (a failed last sync must not retry on a closed store). */
  #closed = false;
  /**
   * Batches run and writes in them, for the benchmark's "writes per commit"; `synced`: syncs
   * of the log made for a batch; `timerSyncs`: made for lazy commits nothing else synced.
   */
  readonly stats = { commits: 0, writes: 0, synced: 0, timerSyncs: 0 };

  constructor(db: Database.Database, options: GroupCommitOptions) {
    this.#db = db;
    this.#options = options;
    this.#batch = db.transaction((writes: PendingWrite[]) => writes.map((write) => this.#runNested(write)));
  }

  /**
   * Runs `transaction(...args)` in the next batch; settles once that batch has committed (or
   * failed), and for a batch with a 'sync' write once the commit is on disk.
   */
  run<F extends Work>(
    transaction: Database.Transaction<F>,
    sync: WriteSync | 'deferred',
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
        // A deferred write is a lazy one that may also wait for its batch (see deferWithinMs).
        sync: sync === 'deferred' ? 'lazy' : sync,
        args,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (sync === 'deferred') {
        if (!this.#scheduled)
          this.#deferTimer ??= setTimeout(() => this.flush(), this.#options.deferWithinMs ?? 0);
      } else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits what is queued now if any of it waits (deferred): a read must see every write asked for before it. */
  commitHeld(): void {
    if (this.#deferTimer !== undefined) this.flush();
  }

  /** Commits what is queued now (the scheduled turn, or close() so that nothing queued is left unsettled). */
  flush(): void {
    this.#scheduled = false;
    clearTimeout(this.#deferTimer);
    this.#deferTimer = undefined;
    const writes = this.#pending;
    this.#pending = [];
    if (writes.length === 0) return;
    this.stats.commits++;
    this.stats.writes += writes.length;
    let outcomes: unknown[];
    try {
      this.#options.check();
      this.#options.beforeBatch?.();
      // Alone: its own transaction, no savepoint needed.
      outcomes =
        writes.length === 1
          ? [(writes[0] as PendingWrite).transaction.immediate(...(writes[0] as PendingWrite).args)]
          : this.#batch.immediate(writes);
    } catch (error) {
      const mapped = this.#options.mapError(error);
      for (const write of writes) write.reject(mapped);
      return;
    }
    this.#options.onCommit?.();
    const settle = () =>
      writes.forEach((write, i) => {
        const outcome = outcomes[i];
        if (outcome instanceof FailedWrite) write.reject(outcome.error);
        else write.resolve(outcome);
      });
    if (!this.#options.syncLog) {
      settle();
      return;
    }
    if (!writes.some((write, i) => write.sync === 'sync' && !(outcomes[i] instanceof FailedWrite))) {
      this.#noteUnsynced();
      settle();
      return;
    }
    this.stats.synced++;
    this.#sync().then(settle, (error: unknown) => {
      const failed = this.#options.syncFailed(error);
      writes.forEach((write, i) => {
        const outcome = outcomes[i];
        write.reject(outcome instanceof FailedWrite ? outcome.error : failed);
      });
    });
  }

  /** Puts every commit so far on disk (after a write made outside a batch that must be: the sweep). */
  async syncNow(): Promise<void> {
    if (this.#options.syncLog) await this.#sync();
  }

  /** A write made outside a batch that need not be on disk at once (a lease renewal). */
  noteUnsynced(): void {
    if (this.#options.syncLog) this.#noteUnsynced();
  }

  /** Commits what is queued, waits for the syncs in flight, and syncs what no sync has covered yet. */
  async close(): Promise<void> {
    this.flush();
    this.#closed = true;
    clearTimeout(this.#syncTimer);
    this.#syncTimer = undefined;
    await Promise.allSettled([...this.#syncing]);
    if (this.#unsyncedSince !== undefined) await this.#sync().catch(() => {});
  }

  /**
   * One fdatasync of the log. It covers every commit made before it starts, so whatever was
   * waiting for one is covered from here (put back if it fails).
   */
  #sync(): Promise<void> {
    const covered = this.#unsyncedSince;
    this.#unsyncedSince = undefined;
    const sync = (this.#options.syncLog as () => Promise<void>)();
    this.#syncing.add(sync);
    return sync.then(
      () => {
        this.#syncing.delete(sync);
      },
      (error: unknown) => {
        this.#syncing.delete(sync);
        if (covered !== undefined) this.#noteUnsynced(covered);
        throw error;
      },
    );
  }

  #noteUnsynced(since = performance.now()): void {
    this.#unsyncedSince = Math.min(this.#unsyncedSince ?? since, since);
    if (this.#closed) return;
    this.#syncTimer ??= setTimeout(() => this.#syncLazyCommits(), this.#options.syncWithinMs).unref();
  }

  /** The timer: a commit no sync has covered for syncWithinMs is synced now; a younger one waits its turn. */
  #syncLazyCommits(): void {
    this.#syncTimer = undefined;
    if (this.#unsyncedSince === undefined) return;
    const waited = performance.now() - this.#unsyncedSince;
    if (waited < this.#options.syncWithinMs) {
      this.#syncTimer = setTimeout(
        () => this.#syncLazyCommits(),
        this.#options.syncWithinMs - waited,
      ).unref();
      return;
    }
    this.stats.timerSyncs++;
    // A failed sync puts its commits back (#sync), which arms the timer again: never given up silently.
    this.#sync().catch(() => {});
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
