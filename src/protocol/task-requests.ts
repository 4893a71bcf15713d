import { untilTerminal, WAIT_ENDED, type WatchedTasks } from './task-result-wait.js';
import {
  createTaskResultV1,
  createTaskResultV2,
  getTaskResultV2,
  missingTasksCapability,
  TASKS_CAPABILITY_V1,
  type TaskError,
  type TaskGeneration,
  type TaskView,
  taskNotFound,
  taskParamV1,
  taskResultV1,
  tasksDeclaredV2,
  taskV1,
} from './tasks.js';

/**
 * Idem's tasks as a client's requests meet them, per revision (docs/tasks.md): which call may
 * become a task, how its task answer reads, and what `tasks/*` answers. One home for the
 * gateway (gateway/session.ts) and the library (library/task-transport.ts); each brings who is
 * asking and the engine that knows the tasks. `modern` is the 2026-07-28 revision (the tasks
 * extension), otherwise the 2025-11-25 experimental tasks.
 */

/** The methods of tasks, both generations: Idem answers them itself, from the store. */
export const TASK_METHODS = new Set([
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
  'tasks/result',
  'tasks/list',
]);

/** What answers for tasks: the execution engine (executions/engine.ts), seen from here. */
export interface TaskSource extends WatchedTasks {
  cancelTask(taskId: string, actor: string): Promise<TaskView | undefined>;
  updateTask(taskId: string, actor: string, responses: unknown): Promise<TaskView | undefined>;
  listTasks(actor: string, after: string | undefined): Promise<{ tasks: TaskView[]; next?: string }>;
}

/** Who asks, and on what: the revision of the request, its actor, and when the request is gone (cancelled, its connection closed). */
export interface TaskAsker {
  modern: boolean;
  actor: string;
  ended: AbortSignal;
}

/** A reply to send, or none: the request ended while it waited (a cancelled request gets no response). */
export type TaskReply = { result: Record<string, unknown> } | { error: TaskError } | typeof WAIT_ENDED;

/** A tool's task policy (the contract's `task`, contracts/contract.ts). */
type TaskPolicy = 'off' | 'optional' | 'required';

/**
 * Whether the client can take a task for this call: a 2026-07-28 request declares the tasks
 * extension in its own `_meta` (never remembered from an earlier one); a 2025-11-25 client asks
 * with `params.task`. A tool that requires a task refuses any other call, before anything runs.
 */
export function taskRequestOf(
  modern: boolean,
  params: unknown,
  policy: TaskPolicy,
  tool: string,
): { task?: { generation: TaskGeneration; ttlMs?: number } } | { refused: { error: TaskError } } {
  if (modern) {
    if (policy !== 'off' && tasksDeclaredV2(params)) return { task: { generation: 'v2' } };
    return policy === 'required' ? { refused: { error: missingTasksCapability() } } : {};
  }
  const asked = taskParamV1(params);
  if (policy !== 'off' && asked) return { task: { generation: 'v1', ...asked } };
  if (policy !== 'required') return {};
  return {
    refused: {
      error: {
        code: -32601,
        message: `Tool ${tool} runs only as a task: call it with params.task (2025-11-25 tasks).`,
      },
    },
  };
}

/** A task answer of a `tools/call`, rendered for the client's revision. */
export function createTaskResult(modern: boolean, view: TaskView): Record<string, unknown> {
  return modern ? createTaskResultV2(view) : createTaskResultV1(view);
}

/** The 2025-11-25 `capabilities.tasks` Idem declares in `initialize`: a fresh copy, the caller's to change. */
export function tasksCapabilityV1(): Record<string, unknown> {
  return structuredClone(TASKS_CAPABILITY_V1) as Record<string, unknown>;
}

/**
 * A client's `tasks/*` request. Idem's tasks are its executions: whoever serves the store answers
 * for every task, after restarts. A task of another actor is answered as one that does not exist.
 */
export function answerTaskRequest(
  source: TaskSource,
  asker: TaskAsker,
  method: string,
  params: unknown,
): Promise<TaskReply> {
  return asker.modern ? modern(source, asker, method, params) : legacy(source, asker, method, params);
}

/** 2026-07-28, the tasks extension (SEP-2663): the extension is declared on each request. */
async function modern(source: TaskSource, { actor }: TaskAsker, method: string, params: unknown) {
  if (method === 'tasks/result' || method === 'tasks/list')
    return { error: { code: -32601, message: `Method not found: ${method} (removed in 2026-07-28)` } };
  if (!tasksDeclaredV2(params)) return { error: missingTasksCapability() };
  const taskId = taskIdOf(params);
  switch (method) {
    case 'tasks/get': {
      const view = await source.getTask(taskId, actor);
      return view ? { result: getTaskResultV2(view) } : { error: taskNotFound(taskId) };
    }
    case 'tasks/cancel': {
      // An acknowledgement only: the cancel is cooperative, tasks/get says how the task ended.
      const view = await source.cancelTask(taskId, actor);
      return view ? { result: { resultType: 'complete' } } : { error: taskNotFound(taskId) };
    }
    default: {
      // tasks/update: answers to what the task's target asked; a key that is not open is ignored.
      const responses = (params as { inputResponses?: unknown } | undefined)?.inputResponses;
      const view = await source.updateTask(taskId, actor, responses);
      return view ? { result: { resultType: 'complete' } } : { error: taskNotFound(taskId) };
    }
  }
}

/** 2025-11-25, the experimental tasks: tasks/result waits for the end and answers as the call would have. */
async function legacy(
  source: TaskSource,
  asker: TaskAsker,
  method: string,
  params: unknown,
): Promise<TaskReply> {
  const { actor } = asker;
  if (method === 'tasks/list') {
    const cursor = (params as { cursor?: unknown } | undefined)?.cursor;
    const page = await source.listTasks(actor, typeof cursor === 'string' ? cursor : undefined);
    return { result: { tasks: page.tasks.map(taskV1), ...(page.next ? { nextCursor: page.next } : {}) } };
  }
  const taskId = taskIdOf(params);
  switch (method) {
    case 'tasks/get': {
      // A 2025-11-25 Task carries no result: tasks/result is what delivers it.
      const view = await source.getTask(taskId, actor, false);
      return view ? { result: taskV1(view) } : { error: taskNotFound(taskId) };
    }
    case 'tasks/cancel': {
      const before = await source.getTask(taskId, actor, false);
      // 2025-11-25: a task that already ended cannot be cancelled.
      if (!before || isTerminal(before)) return { error: taskNotFound(taskId) };
      const view = await source.cancelTask(taskId, actor);
      return view ? { result: taskV1(view) } : { error: taskNotFound(taskId) };
    }
    case 'tasks/result': {
      const view = await untilTerminal(source, taskId, actor, asker.ended);
      if (view === WAIT_ENDED) return WAIT_ENDED;
      return (view && taskResultV1(view)) ?? { error: taskNotFound(taskId) };
    }
    default:
      return { error: { code: -32601, message: `Method not found: ${method}` } };
  }
}

function taskIdOf(params: unknown): string {
  const taskId = (params as { taskId?: unknown } | undefined)?.taskId;
  return typeof taskId === 'string' ? taskId : '';
}

function isTerminal(view: TaskView): boolean {
  return view.status === 'completed' || view.status === 'failed' || view.status === 'cancelled';
}
