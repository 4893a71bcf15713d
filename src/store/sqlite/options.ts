import { StoreUnavailableError } from '../../errors.js';
import type { CheckpointerOptions } from './checkpointer.js';

export interface SqliteStoreOptions {
  /** The database file (created 0600 if missing), or ':memory:'. */
  path: string;
  /** How long a write waits for another process's lock before the store counts as unavailable. */
  busyTimeoutMs?: number;
  /** The store's clock; processes sharing one file share the host's clock. */
  clock?: () => number;
  /**
   * When a commit counts as done. 'full' (the default): a write that lets an
   * action go ahead (a claim, a dispatch, a decision) is on disk before it
   * returns, so neither a process crash nor a power cut loses a claim; an
   * outcome reaches the disk with the next such write, or within 200 ms
   * (src/store/durability.ts). 'normal': survives a process crash; a power cut
   * may lose the last commits, a claim among them, whose action may then run
   * again. Faster per commit.
   */
  synchronous?: SqliteSynchronous;
  /** When the checkpoint worker starts and how often it runs (checkpointer.ts); the defaults suit a gateway. */
  checkpoints?: CheckpointerOptions;
}

export type SqliteSynchronous = 'full' | 'normal';
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;
export const DEFAULT_SQLITE_SYNCHRONOUS: SqliteSynchronous = 'full';

/** The durability asked for (default 'full'); anything else is refused before the file is touched further. */
export function synchronousOf(options: { synchronous?: SqliteSynchronous }): SqliteSynchronous {
  const synchronous = options.synchronous ?? DEFAULT_SQLITE_SYNCHRONOUS;
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw new StoreUnavailableError(
      `SQLite synchronous must be 'full' or 'normal', not ${String(synchronous)}`,
    );
  }
  return synchronous;
}

/** A path that names a file on disk (not SQLite's in-memory or URI forms): only a file has a WAL to sync. */
export function isFile(path: string): boolean {
  return path !== '' && path !== ':memory:' && !path.startsWith('file:');
}
