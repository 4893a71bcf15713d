import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Syncs a database's WAL file to disk: fdatasync on a descriptor of its own.
 * fsync acts on the file, not the descriptor, so it carries every frame
 * SQLite has written to the WAL through its own connection. Opened at the
 * first sync: SQLite creates the -wal file with the first write. The file
 * keeps its inode while a connection is open (SQLite deletes it only when the
 * last one closes, and this store's is open until close()).
 *
 * Synchronous, on the event loop, as SQLite's own synchronous=FULL would be.
 * Run on libuv's thread pool instead (fs.fdatasync), it freed the loop during
 * the disk's work but cost 60–170 µs per claim at one call in flight (the hop
 * to a pool thread and back) and gained nothing at 16 in flight on this VM
 * (bench/results/NOTES.md §7).
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

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
