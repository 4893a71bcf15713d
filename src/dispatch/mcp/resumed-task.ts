import type { UpstreamTaskFollower } from '../../executions/resume.js';
import type { UpstreamTaskHandle } from '../../store/types.js';
import type { UpstreamConnection } from './upstream.js';
import { declaringTasks, followUpstreamTask, taskEndResult } from './upstream-task.js';

/**
 * Follows an upstream's task again from the handle an execution recorded (executions/resume.ts),
 * over a connection to that upstream: `tasks/get` (and, 2025-11-25, `tasks/result`), never the
 * `tools/call` again. It ends as the first follower would have (mcp-channel.ts): the task's
 * result, or OutcomeUnknownError — `-32602` from an upstream that no longer knows the task (it
 * restarted, or keeps its tasks per connection), a lost connection, a cancel without a result.
 */
export function recordedTaskFollower(upstream: UpstreamConnection): UpstreamTaskFollower {
  return {
    async follow(handle: UpstreamTaskHandle, { signal, inputDeadlineAt }) {
      const task = {
        generation: handle.generation,
        taskId: handle.taskId,
        status: 'working',
        pollIntervalMs: handle.pollIntervalMs,
        createdAt: handle.createdAt,
      };
      // A 2026-07-28 upstream is asked as the first follower asked: the extension declared in the request.
      const meta =
        handle.generation === 'v2'
          ? declaringTasks((upstream.client.capabilities ?? {}) as Record<string, unknown>)
          : undefined;
      const end = await followUpstreamTask(upstream, task, {
        signal,
        ...(inputDeadlineAt !== undefined ? { inputDeadlineAt } : {}),
        ...(meta ? { meta } : {}),
      });
      return taskEndResult(end);
    },
  };
}
