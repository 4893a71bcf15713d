import type { UpstreamTaskHandle } from './types.js';

/**
 * What every store keeps to for MCP tasks (ExecutionStore.openTask and the rest), beside
 * the SQL stores' column codecs (sql-columns.ts).
 */

/**
 * A task is opened on an execution the caller holds or just read: a missing one is a trim
 * that raced it, or a bug. Nothing is written.
 */
export function taskWithoutExecution(executionId: string): Error {
  return new Error(`cannot open a task on ${executionId}: there is no such execution`);
}

/** The fields of a handle a store keeps, and nothing a caller attached besides. */
export function keptUpstreamTask(handle: UpstreamTaskHandle): UpstreamTaskHandle {
  return {
    generation: handle.generation,
    upstream: handle.upstream,
    taskId: handle.taskId,
    ...(handle.pollIntervalMs === undefined ? {} : { pollIntervalMs: handle.pollIntervalMs }),
    createdAt: handle.createdAt,
  };
}
