import { close, fdatasync, open } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Syncs a database's WAL file to disk off the event loop: fdatasync on a
 * descriptor of its own, run on libuv's thread pool. fsync acts on the file,
 * not the descriptor, so it carries every frame SQLite has written to the
 * WAL through its own connection. Opened at the first sync: SQLite creates
 * the -wal file with the first write. The file keeps its inode while a
 * connection is open (SQLite deletes it only when the last one closes, and
 * this store's is open until close()).
 */
export class WalSync {
  readonly #path: string;
  #fd: Promise<number> | undefined;

  /** Resolved now, as SQLite resolved it at open: a later chdir must not point the sync elsewhere. */
  constructor(databasePath: string) {
    this.#path = `${resolve(databasePath)}-wal`;
  }

  sync(): Promise<void> {
    this.#fd ??= openForSync(this.#path);
    const fd = this.#fd;
    // A failed open is not remembered: the next sync opens again.
    fd.catch(() => {
      if (this.#fd === fd) this.#fd = undefined;
    });
    return fd.then(
      (descriptor) =>
        new Promise<void>((resolve, reject) => {
          fdatasync(descriptor, (error) => (error ? reject(error) : resolve()));
        }),
    );
  }

  /** Closes the descriptor (after the syncs in flight: the caller waits for them first). */
  async close(): Promise<void> {
    const fd = this.#fd;
    this.#fd = undefined;
    const descriptor = await fd?.catch(() => undefined);
    if (descriptor !== undefined) await new Promise<void>((resolve) => close(descriptor, () => resolve()));
  }
}

function openForSync(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    open(path, 'r', (error, fd) => (error ? reject(error) : resolve(fd)));
  });
}
