import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { answerTaskRequest as answer, createTaskResult as render } from '../protocol/task-requests.js';
import type { TaskView } from '../protocol/tasks.js';
import type { SessionState } from './session-state.js';
import type { ToolCallAnswer } from './tool-calls/answer.js';

export { TASK_METHODS } from '../protocol/task-requests.js';

/**
 * A client's `tasks/*` request on this session (docs/tasks.md), answered from the store by the
 * rules of protocol/task-requests.ts, never by an upstream (whose own task ids no client sees).
 */
export function answerTaskRequest(s: SessionState, request: JSONRPCRequest): Promise<ToolCallAnswer> {
  return answer(
    s.ctx.engine,
    { modern: s.era === 'modern', actor: s.actor(), closed: () => s.closed },
    request.method,
    request.params,
  );
}

/** A task answer, rendered for the client's revision (the pipeline's task answers go through here). */
export function createTaskResult(s: SessionState, view: TaskView): Record<string, unknown> {
  return render(s.era === 'modern', view);
}
