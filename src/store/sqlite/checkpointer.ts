import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { messageOf } from '../../errors.js';
import { startWorkerBeside } from '../../support/worker-module.js';
import {
  type CheckpointPlan,
  CheckpointSignal,
  CheckpointStat,
  newCheckpointShared,
} from './checkpoint-signal.js';

/** SQLite's own default: the commit that takes the log past this many pages checkpoints it. */
export const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;
/**
 * While the worker runs, the store's connection checkpoints only if the log outgrows this: a
 * backstop (80 MiB of 4 KiB pages), for a worker held up or a writer faster than it.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 20_000;

export interface CheckpointerOptions {
  /**
   * Commits before the worker starts. Most stores (every test's) make a handful of writes and
   * never need one; by the default, the log holds about one autocheckpoint's worth of pages.
   */
  startAfterCommits?: number;
  /** How long commits gather before the worker checkpoints them (at most one checkpoint per interval). */
  intervalMs?: number;
  /** Starts the worker thread (checkpoint-worker.ts); a test wraps it to hold the thread. */
  startWorker?: (plan: CheckpointPlan) => Worker;
}

const DEFAULT_START_AFTER_COMMITS = 250;
/**
 * A checkpoint syncs the WAL and then the file: two syncs on the disk the claims sync on. Once a
 * second rather than every 100 ms, the gateway served 3–11 % more calls/s at 16 in flight and
 * answered 4–12 % sooner at one (three same-run comparisons, bench/results/NOTES.md, issue 30
 * round 3). The log then holds up to a second of commits, ~4,000 pages at this machine's pace at
 * one call in flight: below the backstop, which a much faster writer would reach first.
 */
const DEFAULT_INTERVAL_MS = 1_000;
const WORKER_BUSY_TIMEOUT_MS = 50;

/**
 * 'off': a database in memory (no log to checkpoint). 'waiting': not enough commits yet.
 * 'starting' → 'running': the worker checkpoints. 'failed': it could not start, or errored or
 * exited; SQLite's autocheckpoint is back. 'stopped': the store closed.
 */
export type CheckpointerState = 'off' | 'waiting' | 'starting' | 'running' | 'failed' | 'stopped';

export interface CheckpointStats {
  state: CheckpointerState;
  /** PASSIVE checkpoints the worker ran, and those of them that left part of the log behind. */
  checkpoints: number;
  incomplete: number;
  /** Frames in the WAL at the worker's last checkpoint, and how many of them it had copied back. */
  lastLog: number;
  lastCheckpointed: number;
  /** Why the worker is gone, when it failed. */
  failure?: string;
}

export const startCheckpointWorker = (plan: CheckpointPlan): Worker =>
  startWorkerBeside(import.meta.url, 'checkpoint-worker', { workerData: plan });

/**
 * Checkpoints off the event loop. better-sqlite3 is synchronous, and SQLite's
 * autocheckpoint runs inside the commit that takes the log past 1,000 pages:
 * that commit copies the log back into the file and syncs both, on the event
 * loop, holding up every other call of the process (about 250 µs per call on
 * average, measured). Instead a worker thread with a connection of its own
 * runs PASSIVE checkpoints beside the writer (WAL mode allows that), at most
 * once per interval while commits come, and the store's connection keeps
 * autocheckpoint only as a backstop (a much larger log).
 *
 * A checkpointer failure never fails a call: if the worker cannot start,
 * errors or exits, the store's connection gets SQLite's default
 * autocheckpoint back and carries on as it did without a worker.
 *
 * Several processes on one file each run their own; two PASSIVE checkpoints
 * at once are harmless (one returns busy and is tried again).
 */
export class Checkpointer {
  readonly #db: Database.Database;
  readonly #startAfterCommits: number;
  readonly #intervalMs: number;
  readonly #startWorker: (plan: CheckpointPlan) => Worker;
  readonly #shared = newCheckpointShared();
  readonly #signal = new Int32Array(this.#shared, 0, CheckpointSignal.length);
  readonly #stats = new BigInt64Array(this.#shared, CheckpointSignal.bytes, CheckpointStat.length);
  #state: CheckpointerState;
  #commits = 0;
  #failure: string | undefined;
  #worker: Worker | undefined;
  /** Settles when the worker's thread has ended. */
  #exited: Promise<void> | undefined;

  constructor(db: Database.Database, options: CheckpointerOptions = {}) {
    this.#db = db;
    this.#startAfterCommits = options.startAfterCommits ?? DEFAULT_START_AFTER_COMMITS;
    this.#intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.#startWorker = options.startWorker ?? startCheckpointWorker;
    this.#state = db.memory ? 'off' : 'waiting';
  }

  /** After each commit of the store: starts the worker once enough came, then wakes it. */
  noteCommit(): void {
    if (this.#state === 'running' || this.#state === 'starting') {
      Atomics.add(this.#signal, CheckpointSignal.commits, 1);
      Atomics.notify(this.#signal, CheckpointSignal.commits);
    } else if (this.#state === 'waiting' && ++this.#commits >= this.#startAfterCommits) {
      this.#start();
    }
  }

  stats(): CheckpointStats {
    const stat = (slot: number) => Number(Atomics.load(this.#stats, slot));
    return {
      state: this.#state,
      checkpoints: stat(CheckpointStat.checkpoints),
      incomplete: stat(CheckpointStat.incomplete),
      lastLog: stat(CheckpointStat.log),
      lastCheckpointed: stat(CheckpointStat.checkpointed),
      ...(this.#failure === undefined ? {} : { failure: this.#failure }),
    };
  }

  /**
   * Starts no worker from now on, and stops the one that runs: settles once its thread has
   * ended (its connection closed); undefined when no thread was ever started.
   */
  stop(): Promise<void> | undefined {
    if (this.#state !== 'failed') this.#state = 'stopped';
    if (!this.#worker) return undefined;
    // Ref'd again until it has ended: the caller awaits its exit, which an unref'd thread would
    // not keep the process alive for.
    this.#worker.ref();
    this.#worker.postMessage('stop');
    return this.#exited;
  }

  #start(): void {
    this.#state = 'starting';
    let worker: Worker;
    try {
      worker = this.#startWorker({
        path: this.#db.name,
        intervalMs: this.#intervalMs,
        busyTimeoutMs: WORKER_BUSY_TIMEOUT_MS,
        shared: this.#shared,
      });
    } catch (error) {
      this.#fallBack(error);
      return;
    }
    this.#worker = worker;
    this.#exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        if (this.#state !== 'stopped')
          this.#fallBack(new Error(`the checkpoint worker exited with code ${code}`));
        resolve();
      });
    });
    worker.on('error', (error) => this.#fallBack(error));
    worker.on('message', (message) => {
      if (message !== 'ready' || this.#state !== 'starting') return;
      this.#state = 'running';
      this.#setAutocheckpoint(BACKSTOP_AUTOCHECKPOINT_PAGES);
    });
    // Never what keeps a process alive (its connection only reads and checkpoints, which SQLite
    // makes safe to cut off anywhere). After the listeners: adding a 'message' listener refs it again.
    worker.unref();
  }

  /** The worker is gone or never came: SQLite checkpoints in the commits again, as without one. */
  #fallBack(error: unknown): void {
    if (this.#state === 'failed' || this.#state === 'stopped') return;
    this.#state = 'failed';
    this.#failure = messageOf(error);
    this.#setAutocheckpoint(DEFAULT_AUTOCHECKPOINT_PAGES);
  }

  /** Called from the worker's events, outside any transaction; never throws (nothing would catch it). */
  #setAutocheckpoint(pages: number): void {
    try {
      if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${pages}`);
    } catch {
      // The connection cannot take a pragma now: its next commit will say what is wrong.
    }
  }
}
