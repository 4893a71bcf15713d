import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { renderRequestId } from '../../identity/request-key.js';
import { answerTaskRequest as answer, createTaskResult as render } from '../../protocol/task-requests.js';
import { WAIT_ENDED } from '../../protocol/task-result-wait.js';
import type { TaskView } from '../../protocol/tasks.js';
import type { SessionState } from '../sessions/session-state.js';
import { NO_ANSWER, type ToolCallAnswer } from '../tool-calls/answer.js';
import { notifyTaskStatusV1 } from './task-notifications.js';

export { TASK_METHODS } from '../../protocol/task-requests.js';

/**
 * A client's `tasks/*` request on this session (docs/tasks.md), answered from the store by the
 * rules of protocol/task-requests.ts, never by an upstream (whose own task ids no client sees).
 * A 2025-11-25 `tasks/result` waits as long as its request lives: it is tracked like a tool call,
 * so `notifications/cancelled` ends it, and so does the session's close.
 */
export async function answerTaskRequest(s: SessionState, request: JSONRPCRequest): Promise<ToolCallAnswer> {
  const waits = s.era !== 'modern' && request.method === 'tasks/result';
  const cancelled = waits
    ? (s.track(request.id, '', undefined, true).cancelled as AbortController)
    : undefined;
  try {
    const ended = cancelled ? AbortSignal.any([cancelled.signal, s.ended.signal]) : s.ended.signal;
    const reply = await answer(
      s.ctx.engine,
      { modern: s.era === 'modern', actor: s.actor(), ended },
      request.method,
      request.params,
    );
    // A cancelled request gets no response (the client said it will not use one).
    return reply === WAIT_ENDED ? NO_ANSWER : reply;
  } finally {
    if (waits) s.inFlight.delete(renderRequestId(request.id));
  }
}

/**
 * A task answer, rendered for the client's revision (the pipeline's task answers go through here).
 * A 2025-11-25 session hears of its new task's status changes from now on (task-notifications.ts).
 */
export function createTaskResult(s: SessionState, view: TaskView): Record<string, unknown> {
  if (s.era !== 'modern') notifyTaskStatusV1(s, view);
  return render(s.era === 'modern', view);
}
