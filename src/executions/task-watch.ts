import { NotDispatchedError } from '../errors.js';
import { type TaskEventSubject, taskInputAskedEvent } from '../journal/task-events.js';
import { openKeys } from '../store/tasks.js';
import type { TaskInput, TaskInputRequest } from '../store/types.js';
import type { StepContext } from './step-context.js';

/**
 * What the process that dispatched a task watches for while its target works, wherever the
 * task's client is talking to: a tasks/cancel answered by any gateway of the fleet, and the
 * answers to the input its target asked for (tasks/update). Both are in the store
 * (ExecutionStore.watchTask); a change made in this process wakes the watcher at once, one made
 * by another is read at the task's poll interval.
 */

/**
 * Why a dispatch is aborted by its task's cancel: what the target is told (`notifications/cancelled`).
 * An AbortError, as an abort without a reason gives: a channel that rejects with the signal's
 * reason (fetch does) is still read as aborted — unknown, never failed.
 */
export function taskCancelled(): DOMException {
  return new DOMException('the task was cancelled (tasks/cancel)', 'AbortError');
}

/**
 * Until the next poll, or sooner when `onWake`'s wake is called or `signal` aborts. The timer does
 * not hold the process open.
 */
export function untilPollOrWake(
  intervalMs: number,
  onWake: (wake: () => void) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, intervalMs);
    timer.unref();
    signal?.addEventListener('abort', done, { once: true });
    onWake(done);
  });
}

/**
 * Aborts `cancel` once any of the execution's tasks is cancelled, by any process: what the
 * dispatching process does with a cancel answered here (tasks.ts cancelTask) it does with one
 * answered by another gateway too. Stops when `cancel` aborts or the returned stop is called.
 */
export function watchTaskCancel(ctx: StepContext, executionId: string, cancel: AbortController): () => void {
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  cancel.signal.addEventListener('abort', stop, { once: true });
  void (async () => {
    let failing = false;
    while (!stopped.signal.aborted) {
      await untilPollOrWake(ctx.tasks.pollIntervalMs, () => {}, stopped.signal);
      if (stopped.signal.aborted) return;
      try {
        const watch = await ctx.store.watchTask(executionId);
        failing = false;
        if (watch?.cancelRequestedAt != null) {
          cancel.abort(taskCancelled());
          return;
        }
      } catch (error) {
        if (!failing)
          ctx.logger.warn('a running task cannot read the store for its cancel', {
            ref: executionId,
            error: String(error),
          });
        failing = true;
      }
    }
  })();
  return stop;
}

/**
 * The dispatch of a task waits for its client's answers to what the target asked, given to any
 * process: the request is recorded first (holder only, `token`), so that every gateway's
 * tasks/get shows it; the answers are read back, and the request cleared, once every key has one.
 * A cancel of the task meanwhile, in any process, ends it as not executed: the target had not
 * acted. So does a request that cannot be recorded: the caller may safely call again.
 */
export async function waitForInput(
  ctx: StepContext,
  subject: TaskEventSubject,
  token: string,
  requests: Record<string, TaskInputRequest>,
  cancelled: AbortSignal,
): Promise<Record<string, unknown>> {
  const id = subject.executionId;
  // What the target asked is its output, and is scrubbed as its results are.
  const asked = ctx.knownSecrets.redact(requests);
  let kept: boolean;
  try {
    kept = await ctx.store.setTaskInput(id, token, asked, [taskInputAskedEvent(subject, Object.keys(asked))]);
  } catch (error) {
    throw new NotDispatchedError(
      `The target asked for input before it acts, and the request could not be recorded (${String(error)}); nothing was executed, and calling again is safe.`,
    );
  }
  if (!kept) throw lostWhileAsking();
  let wake = () => {};
  ctx.taskInputs.set(id, { wake: () => wake() });
  ctx.taskChanges.changed(id);
  let failing = false;
  try {
    for (;;) {
      if (cancelled.aborted) throw cancelledWhileAsking();
      let input: TaskInput | null | undefined;
      try {
        const watch = await ctx.store.watchTask(id);
        failing = false;
        if (watch?.cancelRequestedAt != null) throw cancelledWhileAsking();
        // Dispatched no longer, or the request gone: another process has taken the execution over.
        if (!watch?.input) throw lostWhileAsking();
        input = watch.input;
      } catch (error) {
        if (error instanceof NotDispatchedError) throw error;
        if (!failing)
          ctx.logger.warn('a task waiting for input cannot read the store', {
            ref: id,
            error: String(error),
          });
        failing = true;
      }
      if (input && openKeys(input).length === 0) {
        // Taken: the answers are not kept once the target has them (they may hold what a user typed).
        await ctx.store.setTaskInput(id, token, null).catch((error: unknown) =>
          ctx.logger.warn("a task's answered input could not be cleared", {
            ref: id,
            error: String(error),
          }),
        );
        return input.answers;
      }
      await untilPollOrWake(ctx.tasks.pollIntervalMs, (w) => (wake = w), cancelled);
    }
  } finally {
    ctx.taskInputs.delete(id);
    ctx.taskChanges.changed(id);
  }
}

function cancelledWhileAsking(): NotDispatchedError {
  return new NotDispatchedError(
    'The task was cancelled while the target waited for input before acting; nothing was executed.',
  );
}

function lostWhileAsking(): NotDispatchedError {
  return new NotDispatchedError(
    'The execution was taken over by another process while its target waited for input before acting; nothing was executed here.',
  );
}
