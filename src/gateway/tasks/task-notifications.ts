import type { JSONRPCNotification } from '@modelcontextprotocol/sdk/types.js';
import { getTaskResultV2, type TaskView, taskV1 } from '../../protocol/tasks.js';
import type { SessionState } from '../sessions/session-state.js';
import type { CallContext, CallSession } from '../tool-calls/call-context.js';

/**
 * Task status notifications (docs/tasks.md): a task's client hears when its status changes, as
 * this process changes it (the engine's task watch: executions/task-changes.ts). Optional in both
 * revisions, so a client still polls; a change made by another gateway of the fleet is heard
 * only by polling. Only the task's own actor ever hears of it: the engine's watch is refused
 * for a task of another actor.
 *
 * - 2025-11-25: the session that made the task gets `notifications/tasks/status` with the Task
 *   (never its result: tasks/result delivers that), on the session's own stream.
 * - 2026-07-28: no sessions; a client names the tasks it wants in `subscriptions/listen`
 *   (`notifications.taskIds`), and that stream carries `notifications/tasks` with the task as
 *   `tasks/get` reads, its result or error inlined: its delivery, as tasks/get's is.
 */

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** The tasks each 2025-11-25 session is watching now, by task id. */
const watchedBy = new WeakMap<CallSession, Set<string>>();

/** 2025-11-25: the session that made task `view` hears of its status changes while the session lives. */
export function notifyTaskStatusV1({ session, engine, actor }: CallContext, view: TaskView): void {
  // A duplicate of the call hands the same task again: it is watched once per session.
  const watched = watchedBy.get(session) ?? new Set<string>();
  watchedBy.set(session, watched);
  if (session.closed || watched.has(view.taskId)) return;
  watched.add(view.taskId);
  let told = taskV1(view).status;
  let ended = false;
  let unwatched: (() => void) | undefined;
  // An ended task changes no more: its watch goes then, not only with the session.
  const stop = () => {
    ended = true;
    watched.delete(view.taskId);
    unwatched?.();
  };
  void engine
    .watchTask(view.taskId, actor, (now) => {
      const task = taskV1(now);
      if (task.status === told || session.closed) return;
      told = task.status;
      void session.send({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: task });
      if (TERMINAL.has(now.status)) stop();
    })
    .then((unwatch) => {
      unwatched = unwatch;
      if (ended) unwatch?.();
      else endWithSession(session.ended, unwatch);
    })
    .catch((error: unknown) => session.failed('notifications/tasks/status', error));
}

/**
 * 2026-07-28: watches the tasks a `subscriptions/listen` asks for, on behalf of its actor; the
 * stream hears each one's state at once and whenever its status changes. Answers the ids agreed
 * to (the actor's own: an id of another actor's task is left out, as one that does not exist)
 * and the function that ends every watch (the stream ended).
 */
export async function watchListenedTasks(
  s: SessionState,
  taskIds: readonly string[],
  deliver: (notification: JSONRPCNotification) => void,
): Promise<{ agreed: string[]; end: () => void }> {
  const actor = s.actor();
  const watches = await Promise.all(
    [...new Set(taskIds)].map(async (taskId) => {
      let told: string | undefined;
      const unwatch = await s.ctx.engine
        .watchTask(
          taskId,
          actor,
          (now) => {
            if (now.status === told) return;
            told = now.status;
            const { resultType: _complete, ...task } = getTaskResultV2(now);
            deliver({ jsonrpc: '2.0', method: 'notifications/tasks', params: task });
          },
          // Terminal: the result is inlined, handed over as tasks/get hands it.
          true,
        )
        .catch(() => undefined);
      return unwatch ? { taskId, unwatch } : undefined;
    }),
  );
  const open = watches.filter((watch) => watch !== undefined);
  return {
    agreed: open.map((watch) => watch.taskId),
    end: () => {
      for (const watch of open) watch.unwatch();
    },
  };
}

/** A session's watch ends when the session does (at once, if it closed while the watch began). */
function endWithSession(ended: AbortSignal, unwatch: (() => void) | undefined): void {
  if (!unwatch) return;
  if (ended.aborted) unwatch();
  else ended.addEventListener('abort', unwatch, { once: true });
}
