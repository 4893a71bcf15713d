import { closeSync, openSync, readSync, type Stats, statSync } from 'node:fs';

/** What a SQLite file begins with (the first 16 bytes of its header). */
const MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** The header's length: its page size (offset 16), change counter (24), page count (28), valid-for (92). */
const HEADER_BYTES = 100;

/**
 * How long the file may stay shorter than its own header says before that counts as a
 * truncation: a checkpoint writes page 1 (with the new page count) first and the pages that
 * extend the file after it, so for the moment it writes, a sound file is shorter than its header
 * says — but it grows while it does. Shorter and not growing for this long is a cut file.
 */
export const SHORTER_THAN_HEADER_MS = 2_000;

/**
 * How often the file is checked besides before each write: so that readiness (and every read)
 * says so within a second when no write comes. A write needs no timer: it checks first.
 */
export const FILE_CHECK_INTERVAL_MS = 1_000;

/** What went wrong with the file under the open store: said in its refusal. */
export type FileChange = string;

/**
 * Watches the file of an open SQLite store for what SQLite itself does not notice: the file
 * deleted, another file put in its place, the file truncated (to half, to nothing), or its header
 * overwritten. SQLite keeps writing through its open handle (to a deleted inode, to a file a
 * checkpoint then extends again with holes), and the store would keep answering calls while what
 * this process wrote is gone: a retry of an action it recorded would find nothing and run again.
 *
 * One check is a stat of the path and a read of the 100-byte header through a handle held open
 * (about 5 µs): the same file (device and inode) as at open; never shorter than any earlier check
 * saw (SQLite never shrinks the file: no auto-vacuum, no VACUUM); a SQLite header; and not
 * shorter than the page count in that header (for longer than SHORTER_THAN_HEADER_MS — see
 * there). The handle is closed only after SQLite's: closing a descriptor of a file drops the
 * process's POSIX locks on it, SQLite's included.
 */
export class StoreFileWatch {
  readonly #path: string;
  readonly #opened: Stats;
  readonly #fd: number;
  readonly #header = Buffer.alloc(HEADER_BYTES);
  readonly #shorterThanHeaderMs: number;
  readonly #now: () => number;
  #longest: number;
  /** Since when (and at which size) the file has been shorter than its header says. */
  #short: { since: number; size: number } | undefined;
  #timer: NodeJS.Timeout | undefined;

  /** A watch of the file at `path` as it is now; undefined when there is no file (a database in memory). */
  static open(
    path: string,
    options: { shorterThanHeaderMs?: number; now?: () => number } = {},
  ): StoreFileWatch | undefined {
    if (path === '' || path === ':memory:' || path.startsWith('file:')) return undefined;
    const fd = openSync(path, 'r');
    return new StoreFileWatch(path, fd, options);
  }

  private constructor(
    path: string,
    fd: number,
    options: { shorterThanHeaderMs?: number; now?: () => number },
  ) {
    this.#path = path;
    this.#fd = fd;
    this.#opened = statSync(path);
    this.#longest = this.#opened.size;
    this.#shorterThanHeaderMs = options.shorterThanHeaderMs ?? SHORTER_THAN_HEADER_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Checks every FILE_CHECK_INTERVAL_MS until closed (never what keeps the process alive), and
   * tells `changed` of the first change, once.
   */
  every(changed: (change: FileChange) => void, intervalMs = FILE_CHECK_INTERVAL_MS): void {
    this.#timer = setInterval(() => {
      const change = this.check();
      if (!change) return;
      clearInterval(this.#timer);
      changed(change);
    }, intervalMs);
    this.#timer.unref();
  }

  /**
   * What happened to the file since it was opened, or undefined while it is the file the store
   * opened, whole. A file that cannot even be looked at (EIO, EACCES) is a change too: nothing
   * says it is still the store's.
   */
  check(): FileChange | undefined {
    try {
      return this.#check();
    } catch (error) {
      return `could not be checked (${(error as Error).message})`;
    }
  }

  #check(): FileChange | undefined {
    const now = statSync(this.#path, { throwIfNoEntry: false });
    if (!now) return 'was deleted';
    if (now.ino !== this.#opened.ino || now.dev !== this.#opened.dev)
      return 'was replaced: another file is at its path now';
    if (now.size < this.#longest)
      return `was truncated: ${now.size} bytes, after ${this.#longest} (SQLite never shrinks it)`;
    this.#longest = now.size;
    if (now.size === 0) return undefined;
    const read = readSync(this.#fd, this.#header, 0, HEADER_BYTES, 0);
    if (read < HEADER_BYTES || !this.#header.subarray(0, MAGIC.length).equals(MAGIC))
      return 'lost its header: it no longer begins as a SQLite database';
    return this.#shorterThanHeader(now.size);
  }

  /** Stops the timer. */
  stop(): void {
    clearInterval(this.#timer);
  }

  /** Closes the handle; call it after SQLite's connection is closed. */
  close(): void {
    this.stop();
    closeSync(this.#fd);
  }

  #shorterThanHeader(size: number): FileChange | undefined {
    const pageSize = this.#header.readUInt16BE(16) === 1 ? 65_536 : this.#header.readUInt16BE(16);
    const pages = this.#header.readUInt32BE(28);
    // The page count is valid only when the change counter matches its valid-for number.
    const valid = pages > 0 && this.#header.readUInt32BE(24) === this.#header.readUInt32BE(92);
    if (!valid || size >= pages * pageSize) {
      this.#short = undefined;
      return undefined;
    }
    const now = this.#now();
    if (!this.#short || this.#short.size !== size) {
      this.#short = { since: now, size };
      if (this.#shorterThanHeaderMs > 0) return undefined;
    }
    if (now - this.#short.since < this.#shorterThanHeaderMs) return undefined;
    return `was truncated: ${size} bytes, though its header says ${pages * pageSize}`;
  }
}
