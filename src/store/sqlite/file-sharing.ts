import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';

/**
 * Whether another process may have this store's file open — and so read it.
 *
 * It decides whether an outcome may be answered before its write (ExecutionStore.soleReader):
 * a write this process holds back is seen by its own reads (they commit it first), never by
 * another process's. Two gateways on one data directory must each see the other's finished
 * calls as finished the moment their answers left.
 *
 * Three signs, each sticky for the life of the store (it only costs the held write's saving):
 * - at open, the file's write-ahead log already exists: another connection has it open (or one
 *   crashed and left it; the cautious reading either way);
 * - at open, this connection announces itself with a commit (it rewrites PRAGMA user_version to
 *   the value it has), which every connection already open sees in its PRAGMA data_version;
 * - later, PRAGMA data_version has moved: another connection committed (opened, or wrote). A
 *   PASSIVE checkpoint (the checkpointer's) commits nothing and moves nothing; a TRUNCATE one by
 *   another connection does move it, and counts, cautiously, as another process.
 *
 * A process that opens the file while this one holds a write (≤ OUTCOME_WRITE_WITHIN_MS) may see
 * that one call in flight until it commits: the only window, at one process's start.
 */
export class FileSharing {
  readonly #db: Database.Database;
  #shared: boolean;
  readonly #version: number;

  /** `logExistedAtOpen`: checked before this connection opened the file (its own open creates the log). */
  constructor(db: Database.Database, logExistedAtOpen: boolean) {
    this.#db = db;
    // Nobody else can open an in-memory database.
    this.#shared = !db.memory && logExistedAtOpen;
    this.#version = this.#dataVersion();
    if (!db.memory) {
      try {
        const version = db.pragma('user_version', { simple: true }) as number;
        db.pragma(`user_version = ${version}`);
      } catch {
        // A connection that cannot write (read-only) holds nothing back either: cautious all the same.
        this.#shared = true;
      }
    }
  }

  /** Called before a write is held back: true once another process has been seen. */
  get shared(): boolean {
    if (!this.#shared && this.#dataVersion() !== this.#version) this.#shared = true;
    return this.#shared;
  }

  #dataVersion(): number {
    return this.#db.pragma('data_version', { simple: true }) as number;
  }
}

/** Whether the store file's write-ahead log exists: asked before opening it (FileSharing). */
export function writeAheadLogExists(path: string): boolean {
  return existsSync(`${path}-wal`);
}
