import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { renderRequestId } from '../identity/request-key.js';
import {
  createTaskResultV1,
  createTaskResultV2,
  getTaskResultV2,
  missingTasksCapability,
  type TaskView,
  taskNotFound,
  taskResultV1,
  tasksDeclaredV2,
  taskV1,
} from '../protocol/tasks.js';
import type { SessionState } from './session-state.js';
import { notifyTaskStatusV1 } from './task-notifications.js';
import { untilTerminal, WAIT_ENDED } from './task-result-wait.js';
import { NO_ANSWER, type ToolCallAnswer } from './tool-calls/answer.js';

/** The methods of tasks, both generations: the gateway answers them itself, from the store. */
export const TASK_METHODS = new Set([
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
  'tasks/result',
  'tasks/list',
]);

/**
 * A client's `tasks/*` request (docs/tasks.md). Idem's tasks are its executions: every gateway
 * on the store answers for every task, after restarts, and never asks an upstream (whose own task
 * ids no client sees). A task of another actor is answered as one that does not exist.
 */
export async function answerTaskRequest(s: SessionState, request: JSONRPCRequest): Promise<ToolCallAnswer> {
  return s.era === 'modern' ? modern(s, request) : legacy(s, request);
}

/** 2026-07-28, the tasks extension (SEP-2663): the extension is declared on each request. */
async function modern(s: SessionState, request: JSONRPCRequest): Promise<ToolCallAnswer> {
  if (request.method === 'tasks/result' || request.method === 'tasks/list')
    return {
      error: { code: -32601, message: `Method not found: ${request.method} (removed in 2026-07-28)` },
    };
  if (!tasksDeclaredV2(request.params)) return { error: missingTasksCapability() };
  const taskId = taskIdOf(request);
  const actor = s.actor();
  switch (request.method) {
    case 'tasks/get': {
      const view = await s.ctx.engine.getTask(taskId, actor);
      return view ? { result: getTaskResultV2(view) } : { error: taskNotFound(taskId) };
    }
    case 'tasks/cancel': {
      // An acknowledgement only: the cancel is cooperative, tasks/get says how the task ended.
      const view = await s.ctx.engine.cancelTask(taskId, actor);
      return view ? { result: { resultType: 'complete' } } : { error: taskNotFound(taskId) };
    }
    default: {
      // tasks/update: answers to what the task's target asked; a key that is not open is ignored.
      const responses = (request.params as { inputResponses?: unknown } | undefined)?.inputResponses;
      const view = await s.ctx.engine.updateTask(taskId, actor, responses);
      return view ? { result: { resultType: 'complete' } } : { error: taskNotFound(taskId) };
    }
  }
}

/** 2025-11-25, the experimental tasks: tasks/result waits for the end and answers as the call would have. */
async function legacy(s: SessionState, request: JSONRPCRequest): Promise<ToolCallAnswer> {
  const actor = s.actor();
  if (request.method === 'tasks/list') {
    const cursor = (request.params as { cursor?: unknown } | undefined)?.cursor;
    const page = await s.ctx.engine.listTasks(actor, typeof cursor === 'string' ? cursor : undefined);
    return { result: { tasks: page.tasks.map(taskV1), ...(page.next ? { nextCursor: page.next } : {}) } };
  }
  const taskId = taskIdOf(request);
  switch (request.method) {
    case 'tasks/get': {
      // A 2025-11-25 Task carries no result: tasks/result is what delivers it.
      const view = await s.ctx.engine.getTask(taskId, actor, false);
      return view ? { result: taskV1(view) } : { error: taskNotFound(taskId) };
    }
    case 'tasks/cancel': {
      const before = await s.ctx.engine.getTask(taskId, actor, false);
      // 2025-11-25: a task that already ended cannot be cancelled.
      if (!before || isTerminal(before)) return { error: taskNotFound(taskId) };
      const view = await s.ctx.engine.cancelTask(taskId, actor);
      return view ? { result: taskV1(view) } : { error: taskNotFound(taskId) };
    }
    case 'tasks/result':
      return taskResult(s, request, taskId, actor);
    default:
      return { error: { code: -32601, message: `Method not found: ${request.method}` } };
  }
}

/** 2025-11-25 `tasks/result`: the wait is the request's, cancellable as a tool call is (task-result-wait.ts). */
async function taskResult(
  s: SessionState,
  request: JSONRPCRequest,
  taskId: string,
  actor: string,
): Promise<ToolCallAnswer> {
  const forwarded = s.track(request.id, '', undefined, true);
  try {
    const view = await untilTerminal(s, taskId, actor, (forwarded.cancelled as AbortController).signal);
    // A cancelled request gets no response (the client said it will not use one).
    if (view === WAIT_ENDED) return NO_ANSWER;
    return (view && taskResultV1(view)) ?? { error: taskNotFound(taskId) };
  } finally {
    s.inFlight.delete(renderRequestId(request.id));
  }
}

/**
 * A task answer, rendered for the client's revision (the pipeline's task answers go through here).
 * A 2025-11-25 session hears of its new task's status changes from now on (task-notifications.ts).
 */
export function createTaskResult(s: SessionState, view: TaskView): Record<string, unknown> {
  if (s.era === 'modern') return createTaskResultV2(view);
  notifyTaskStatusV1(s, view);
  return createTaskResultV1(view);
}

function taskIdOf(request: JSONRPCRequest): string {
  const taskId = (request.params as { taskId?: unknown } | undefined)?.taskId;
  return typeof taskId === 'string' ? taskId : '';
}

function isTerminal(view: TaskView): boolean {
  return view.status === 'completed' || view.status === 'failed' || view.status === 'cancelled';
}
