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
 * When it looks: inside each claim's transaction, where reading PRAGMA data_version costs nothing
 * (outside one it starts a read of its own: ~10 µs a call), and when asked
 * with no claim's look since the last ask. So an outcome is judged by the latest claim's look —
 * at one call in flight, its own.
 *
 * The window left, at one process's start: a process that opens the file after the claim of a call
 * whose answer leaves early may see that call in flight until its write commits (≤
 * OUTCOME_WRITE_WITHIN_MS after the answer).
 */
export class FileSharing {
  /** Prepared once: `db.pragma()` prepares on every call (~20 µs). */
  readonly #dataVersionNow: Database.Statement<[], number>;
  #shared: boolean;
  readonly #version: number;
  /** A claim has looked since `shared` was last asked. */
  #fresh = false;

  /** `logExistedAtOpen`: checked before this connection opened the file (its own open creates the log). */
  constructor(db: Database.Database, logExistedAtOpen: boolean) {
    this.#dataVersionNow = db.prepare<[], number>('PRAGMA data_version').pluck();
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

  /** Asked before a write is held back: true once another process has been seen. */
  get shared(): boolean {
    if (!this.#fresh) this.look();
    this.#fresh = false;
    return this.#shared;
  }

  /** Reads PRAGMA data_version: free inside a write transaction (the claim's, which calls it). */
  look(): void {
    if (!this.#shared && this.#dataVersion() !== this.#version) this.#shared = true;
    this.#fresh = true;
  }

  #dataVersion(): number {
    return this.#dataVersionNow.get() as number;
  }
}

/** Whether the store file's write-ahead log exists: asked before opening it (FileSharing). */
export function writeAheadLogExists(path: string): boolean {
  return existsSync(`${path}-wal`);
}
