/**
 * The checkpointer's thread (checkpointer.ts): its own connection to the
 * store's file, on which it only ever runs PASSIVE checkpoints. It never
 * migrates, never writes a row: the store's connection owns the schema.
 *
 * The store's thread counts commits in shared memory (one atomic add and
 * notify per commit: no message, no timer on its side); this thread waits for
 * that count to move with Atomics.waitAsync, which leaves its event loop free
 * so that a 'stop' message, or Node ending the thread at process exit, is
 * never held up (a blocking Atomics.wait held up the process's exit).
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { type CheckpointPlan, CheckpointSignal, CheckpointStat } from './checkpoint-signal.js';

const plan = workerData as CheckpointPlan;
const signal = new Int32Array(plan.shared, 0, CheckpointSignal.length);
const stats = new BigInt64Array(plan.shared, CheckpointSignal.bytes, CheckpointStat.length);

// A small busy timeout: a checkpoint that would wait is simply tried again after the next commit.
const db = new Database(plan.path, { fileMustExist: true, timeout: plan.busyTimeoutMs });
// A checkpoint syncs the WAL before it copies it back and the file after: what makes a commit
// made with NORMAL durable (group-commit.ts). OFF would skip both syncs.
db.pragma('synchronous = NORMAL');
// A fresh connection learns that the file is in WAL mode only when it first reads it; until then
// a checkpoint does nothing.
db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1').get();
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

let seen = Atomics.load(signal, CheckpointSignal.commits);
let pause: NodeJS.Timeout | undefined;
let stopped = false;

/** Waits for the next commit, then lets commits gather for the interval: at most one checkpoint per interval. */
function afterNextCommit(): void {
  const wait = Atomics.waitAsync(signal, CheckpointSignal.commits, seen);
  if (wait.async) void wait.value.then(afterInterval);
  else afterInterval();
}

function afterInterval(): void {
  if (!stopped) pause = setTimeout(checkpointNow, plan.intervalMs);
}

function checkpointNow(): void {
  pause = undefined;
  seen = Atomics.load(signal, CheckpointSignal.commits);
  let result: { busy: number; log: number; checkpointed: number };
  try {
    result = checkpoint.get() as typeof result;
  } catch (error) {
    // The store's thread sees this as the worker's 'error' and takes autocheckpoint back.
    db.close();
    throw error;
  }
  Atomics.add(stats, CheckpointStat.checkpoints, 1n);
  Atomics.store(stats, CheckpointStat.log, BigInt(result.log));
  Atomics.store(stats, CheckpointStat.checkpointed, BigInt(result.checkpointed));
  // Busy (another connection was checkpointing) or held back by a reader: part of the log is not
  // in the file yet, so it is tried again after the interval even if no commit comes.
  if (result.busy !== 0 || result.checkpointed < result.log) {
    Atomics.add(stats, CheckpointStat.incomplete, 1n);
    afterInterval();
  } else {
    afterNextCommit();
  }
}

// The port's listener is also what keeps this thread alive: a pending waitAsync does not.
parentPort?.on('message', (message) => {
  if (message !== 'stop' || stopped) return;
  stopped = true;
  clearTimeout(pause);
  db.close();
  parentPort?.close();
});
parentPort?.postMessage('ready');
afterNextCommit();
