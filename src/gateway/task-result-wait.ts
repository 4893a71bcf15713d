import type { TaskView } from '../protocol/tasks.js';
import type { SessionState } from './session-state.js';

/** The wait ended because its request did (cancelled, or its session closed): nothing is answered. */
export const WAIT_ENDED = Symbol('the tasks/result request ended');

/**
 * 2025-11-25 `tasks/result`: waits until the task has ended, and never longer than its request
 * lives — a task whose outcome is unknown may never end until an operator resolves it, and a
 * client that left must not leave a loop behind. It ends on the request's cancellation
 * (`notifications/cancelled`) and on the session's close (on the stateless front the request's
 * connection closing closes its session). It asks the store at the task's poll interval, since
 * another gateway of the fleet may be running the task and nothing here would hear of it, and
 * at once when this process changes the task (the engine's task watch).
 */
export async function untilTerminal(
  s: SessionState,
  taskId: string,
  actor: string,
  request: AbortSignal,
): Promise<TaskView | undefined | typeof WAIT_ENDED> {
  const ended = AbortSignal.any([request, s.ended.signal]);
  let changed = false;
  let wake: (() => void) | undefined;
  const unwatch = await s.ctx.engine.watchTask(taskId, actor, () => {
    changed = true;
    wake?.();
  });
  if (!unwatch) return undefined;
  try {
    for (;;) {
      if (ended.aborted) return WAIT_ENDED;
      changed = false;
      const view = await s.ctx.engine.getTask(taskId, actor, false);
      if (!view) return undefined;
      if (ended.aborted) return WAIT_ENDED;
      // The ended task's result goes to the client now: its delivery.
      if (isTerminal(view)) return s.ctx.engine.getTask(taskId, actor);
      // A change heard while the store was read is not slept through.
      if (!changed) await nextChange(view.pollIntervalMs, ended, (w) => (wake = w));
      wake = undefined;
    }
  } finally {
    unwatch();
  }
}

/** Resolves after `ms`, when `ended` aborts, or when the function handed to `onWake` is called. */
function nextChange(ms: number, ended: AbortSignal, onWake: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      ended.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    ended.addEventListener('abort', done, { once: true });
    onWake(done);
  });
}

function isTerminal(view: TaskView): boolean {
  return view.status === 'completed' || view.status === 'failed' || view.status === 'cancelled';
}
