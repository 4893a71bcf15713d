import type Database from 'better-sqlite3';
import { StoreRefusedError } from '../../errors.js';
import { DAMAGE } from './errors.js';
import { StoreFileWatch } from './file-watch.js';
import { fileChanged, syncFailure } from './integrity.js';

/**
 * What makes an open store refuse every call until it is reopened, kept in one place: damage a
 * read or write met, an fsync that failed (integrity.ts), or its file deleted, replaced or cut
 * under it (file-watch.ts: checked before each batch of writes, and every second so that readiness
 * drops when no write comes). The first cause found is the one every later call is refused with.
 */
export class StoreRefusal {
  readonly #path: string;
  readonly #file: StoreFileWatch | undefined;
  #refused: StoreRefusedError | undefined;

  constructor(db: Database.Database) {
    this.#path = db.name;
    this.#file = db.memory ? undefined : StoreFileWatch.open(db.name);
    this.#file?.every((change) => this.#refuse(fileChanged(this.#path, change)));
  }

  /** Throws the refusal, once there is one. */
  check(): void {
    if (this.#refused) throw this.#refused;
  }

  /** Before a batch of writes commits: the file is looked at first, so no claim commits to a file that changed. */
  checkFile(): void {
    const change = this.#file?.check();
    if (change) this.#refuse(fileChanged(this.#path, change));
    this.check();
  }

  /** An fsync of the log failed (integrity.ts syncFailure says why the store is refused from then on). */
  syncFailed(error: unknown): StoreRefusedError {
    return this.#refuse(syncFailure(this.#path, error));
  }

  /** An error a call met, mapped: damage in the file refuses the store, for what else it holds cannot be trusted either. */
  met(mapped: unknown): void {
    if (mapped instanceof StoreRefusedError && DAMAGE.includes(mapped.reason)) this.#refuse(mapped);
  }

  /** Stops watching the file; after SQLite's connection is closed (see StoreFileWatch). */
  close(): void {
    this.#file?.close();
  }

  #refuse(refusal: StoreRefusedError): StoreRefusedError {
    this.#refused ??= refusal;
    return this.#refused;
  }
}
