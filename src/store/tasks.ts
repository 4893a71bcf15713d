import type { TaskInput, TaskInputRequest, UpstreamTaskHandle } from './types.js';

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

/**
 * What a task's input is once `offered` answers are taken (ExecutionStore.answerTaskInput), the
 * one rule every store applies: a key that was asked and not answered yet, with an object as its
 * answer, is taken; anything else is ignored. `taken` names the keys taken (none: nothing changes).
 */
export function takeAnswers(
  input: TaskInput,
  offered: Record<string, unknown>,
): { input: TaskInput; taken: string[] } {
  const taken = Object.keys(offered).filter((key) => {
    const answer = offered[key];
    return (
      Object.hasOwn(input.requests, key) &&
      !Object.hasOwn(input.answers, key) &&
      typeof answer === 'object' &&
      answer !== null &&
      !Array.isArray(answer)
    );
  });
  if (taken.length === 0) return { input, taken };
  const answers = { ...input.answers };
  for (const key of taken) answers[key] = offered[key];
  return { input: { ...input, answers }, taken };
}

/**
 * A task's input once `requests` are added (ExecutionStore.addTaskInput), the one rule every store
 * applies: a key not asked yet joins; one asked already is left as it is, with any answer it has.
 */
export function addedRequests(
  input: TaskInput | null,
  requests: Record<string, TaskInputRequest>,
  now: number,
): TaskInput {
  const added = Object.entries(requests).filter(([key]) => !input || !Object.hasOwn(input.requests, key));
  if (!input) return { requests: Object.fromEntries(added), answers: {}, askedAt: now };
  return { ...input, requests: { ...input.requests, ...Object.fromEntries(added) } };
}

/** The keys of a task's input that are not answered yet. */
export function openKeys(input: TaskInput): string[] {
  return Object.keys(input.requests).filter((key) => !Object.hasOwn(input.answers, key));
}
