import type { TaskView } from './tasks.js';

/** What the wait reads: the tasks (executions/engine.ts), and their changes in this process. */
export interface WatchedTasks {
  getTask(taskId: string, actor: string, delivering?: boolean): Promise<TaskView | undefined>;
  /** Calls `heard` on each change this process makes to the task; undefined: not this actor's task. */
  watchTask(taskId: string, actor: string, heard: () => void): Promise<(() => void) | undefined>;
}

/** The wait ended because its request did (cancelled, or its session closed): nothing is answered. */
export const WAIT_ENDED = Symbol('the tasks/result request ended');

/**
 * 2025-11-25 `tasks/result`: waits until the task has ended, and never longer than its request
 * lives — a task whose outcome is unknown may never end until an operator resolves it, and a
 * client that left must not leave a loop behind. It ends when `ended` aborts: the request's
 * cancellation (`notifications/cancelled`), its session's or connection's close (on the
 * gateway's stateless front the request's connection closing closes its session). It asks the store at the task's poll interval, since
 * another gateway of the fleet may be running the task and nothing here would hear of it, and
 * at once when this process changes the task (the engine's task watch).
 */
export async function untilTerminal(
  tasks: WatchedTasks,
  taskId: string,
  actor: string,
  ended: AbortSignal,
): Promise<TaskView | undefined | typeof WAIT_ENDED> {
  let changed = false;
  let wake: (() => void) | undefined;
  const unwatch = await tasks.watchTask(taskId, actor, () => {
    changed = true;
    wake?.();
  });
  if (!unwatch) return undefined;
  try {
    for (;;) {
      if (ended.aborted) return WAIT_ENDED;
      changed = false;
      const view = await tasks.getTask(taskId, actor, false);
      if (!view) return undefined;
      if (ended.aborted) return WAIT_ENDED;
      // The ended task's result goes to the client now: its delivery.
      if (isTerminal(view)) return tasks.getTask(taskId, actor);
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
