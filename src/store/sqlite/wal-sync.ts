import { closeSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Syncs a database's WAL file to disk: fdatasync on a descriptor of its own.
 * fsync acts on the file, not the descriptor, so it carries every frame
 * SQLite has written to the WAL through its own connection. Opened at the
 * first sync: SQLite creates the -wal file with the first write. The file
 * keeps its inode while a connection is open (SQLite deletes it only when the
 * last one closes, and this store's is open until close()).
 *
 * Two ways, chosen per sync by group commit (group-commit.ts WriteWait):
 * - sync(): on the event loop, as SQLite's own synchronous=FULL would be.
 *   The quicker one for a call alone: on libuv's thread pool, the hop to a
 *   pool thread and back cost 60–170 µs per claim on this VM.
 * - syncOffLoop(): on the thread pool, for a claim made while other calls are
 *   in progress: the loop serves them during the disk's work (0.4–2 ms here)
 *   instead of holding them all (docs/benchmarks.md §7).
 */
export class WalSync {
  readonly #path: string;
  #fd: number | undefined;

  /** Resolved now, as SQLite resolved it at open: a later chdir must not point the sync elsewhere. */
  constructor(databasePath: string) {
    this.#path = `${resolve(databasePath)}-wal`;
  }

  /** Throws what the system says when the file cannot be opened or synced. */
  sync(): void {
    // A failed open is not remembered: the next sync opens again.
    this.#fd ??= openSync(this.#path, 'r');
    fdatasyncSync(this.#fd);
  }

  /** The same sync on a thread of libuv's pool; the promise rejects with what the system says. */
  syncOffLoop(): Promise<void> {
    return new Promise((resolve, reject) => {
      // A failed open is not remembered: the next sync opens again.
      this.#fd ??= openSync(this.#path, 'r');
      fdatasync(this.#fd, (error) => (error ? reject(error) : resolve()));
    });
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
