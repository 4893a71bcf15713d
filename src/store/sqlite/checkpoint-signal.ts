/**
 * What the store's thread and its checkpointer's thread share
 * (checkpointer.ts, checkpoint-worker.ts): one SharedArrayBuffer holding an
 * Int32Array of signals, then a BigInt64Array of counters the worker keeps.
 */
export interface CheckpointPlan {
  /** The store's file. */
  path: string;
  /** How long commits gather before a checkpoint: at most one checkpoint per interval. */
  intervalMs: number;
  /** The worker connection's busy timeout. */
  busyTimeoutMs: number;
  /** CheckpointSignal.bytes + CheckpointStat.bytes. */
  shared: SharedArrayBuffer;
}

/** Int32 slots, written by the store's thread. */
export const CheckpointSignal = {
  /** Commits made so far, wrapping: the worker waits for it to change. */
  commits: 0,
  length: 2,
  /** Two slots (one spare) keep the counters after them 8-byte aligned. */
  bytes: 8,
} as const;

/** BigInt64 slots after the signals, written by the worker. */
export const CheckpointStat = {
  /** PASSIVE checkpoints run. */
  checkpoints: 0,
  /** Of them, those that could not copy the whole log back (busy, or a reader held part of it). */
  incomplete: 1,
  /** Frames in the WAL at the last checkpoint, and how many of them were in the file after it. */
  log: 2,
  checkpointed: 3,
  length: 4,
  bytes: 32,
} as const;

export function newCheckpointShared(): SharedArrayBuffer {
  return new SharedArrayBuffer(CheckpointSignal.bytes + CheckpointStat.bytes);
}
