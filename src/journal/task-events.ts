import type { ActivityEventInput } from './events.js';

/**
 * The journal events of MCP tasks, built in one place so every writer spells their
 * detail the same way. A store writes each in the same write as the change it records
 * (ExecutionStore.openTask, requestTaskCancel, setUpstreamTask, setTaskInput, answerTaskInput). None changes an
 * execution's state: the journal's states (rebuild.ts) pass over them.
 */

/** The execution an event is about, and who acted: for a task, the task's actor. */
export interface TaskEventSubject {
  executionId: string;
  actor: string;
  tool: string;
}

/** What a cancel came ahead of: nothing had been sent yet, the call waited for input, or its outcome was not in yet. */
export type TaskCancelPoint = 'dispatch' | 'input' | 'outcome';

export function taskCreatedEvent(
  subject: TaskEventSubject,
  task: { taskId: string; generation: 'v1' | 'v2'; ttlMs: number | null },
): ActivityEventInput {
  return {
    kind: 'task_created',
    ...subject,
    detail: { taskId: task.taskId, generation: task.generation, ttlMs: task.ttlMs },
  };
}

export function taskCancelEvent(
  subject: TaskEventSubject,
  taskId: string,
  before: TaskCancelPoint,
): ActivityEventInput {
  return { kind: 'task_cancel', ...subject, detail: { taskId, before } };
}

/** What a task's target asked for (its keys), journaled by the holder as it records the request. */
export function taskInputAskedEvent(subject: TaskEventSubject, keys: readonly string[]): ActivityEventInput {
  return { kind: 'task_input', ...subject, detail: { asked: [...keys] } };
}

/** Which keys a client's tasks/update answered: never the answers, which may hold what its user typed. */
export function taskInputAnsweredEvent(
  subject: TaskEventSubject,
  taskId: string,
  keys: readonly string[],
): ActivityEventInput {
  return { kind: 'task_input', ...subject, detail: { taskId, answered: [...keys] } };
}

/** The upstream's task id is journaled under its own name: it is never the client's task id. */
export function upstreamTaskEvent(
  subject: TaskEventSubject,
  handle: { generation: 'v1' | 'v2'; upstream: string; taskId: string },
  status?: string,
): ActivityEventInput {
  return {
    kind: 'upstream_task',
    ...subject,
    detail: {
      generation: handle.generation,
      upstream: handle.upstream,
      upstreamTaskId: handle.taskId,
      ...(status === undefined ? {} : { status }),
    },
  };
}

/** The tasks an execution's journal names (its `task_created` events), oldest first, each with its actor. */
export function tasksIn(
  timeline: readonly { kind: string; actor: string | null; detail: Record<string, unknown> }[],
): {
  taskId: string;
  actor: string | null;
}[] {
  return timeline
    .filter((e) => e.kind === 'task_created' && typeof e.detail.taskId === 'string')
    .map((e) => ({ taskId: e.detail.taskId as string, actor: e.actor }));
}

/** An execution taken over to follow its upstream's task again, its holder lost (executions/resume.ts). */
export function upstreamTaskResumedEvent(
  subject: TaskEventSubject,
  handle: { generation: 'v1' | 'v2'; upstream: string; taskId: string },
  from: 'dispatched' | 'unknown',
  owner: string,
): ActivityEventInput {
  return {
    kind: 'upstream_task_resumed',
    ...subject,
    detail: {
      generation: handle.generation,
      upstream: handle.upstream,
      upstreamTaskId: handle.taskId,
      from,
      owner,
    },
  };
}
