import { type TaskEventSubject, taskInputAskedEvent } from '../journal/task-events.js';
import { openKeys } from '../store/tasks.js';
import type { PushedReply, PushedRequest } from './call.js';
import type { StepContext } from './step-context.js';
import { untilPollOrWake } from './task-watch.js';

/** What a client can be asked for a target (MCP: elicitation, sampling, roots). */
const ASKABLE = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

/**
 * What a target pushes while it works, once its call is a 2026-07-28 task (docs/tasks.md,
 * "Input"): a 2025-era upstream asks its client by sending it a request (`server.elicitInput`)
 * in the middle of the call, and the task's client can only answer through the task. Each request
 * is added to the task's input under a key of its own (ExecutionStore.addTaskInput: in the store,
 * so any gateway of the fleet shows it and takes the answers); each answer, given to any gateway
 * with `tasks/update`, goes back to the request that asked as soon as it is read (a partial answer
 * leaves the rest open). Two questions at once are two keys of one input.
 *
 * The target had the call and may have acted before it asked: a cancel meanwhile is the call's
 * (its channel tells the target, and awaits what it answers); the questions are answered as
 * dismissed (`{action: "cancel"}` for an elicitation). One per dispatch; every request it takes
 * is settled on every path, the dispatch's end included.
 */
export class PushedInput {
  readonly #ctx: StepContext;
  readonly #subject: TaskEventSubject;
  readonly #token: string;
  readonly #cancelled: AbortSignal;
  /** The requests not answered yet, by key. */
  readonly #waiting = new Map<string, { method: string; settle(reply: PushedReply): void }>();
  #next = 1;
  /** The holder's writes of the input, one at a time: an addition and a clearing never cross. */
  #writes: Promise<unknown> = Promise.resolve();
  #watching = false;
  #ended = false;
  /** Input of this dispatch's is open in the store (added, not cleared since). */
  #open = false;

  constructor(ctx: StepContext, subject: TaskEventSubject, token: string, cancelled: AbortSignal) {
    this.#ctx = ctx;
    this.#subject = subject;
    this.#token = token;
    this.#cancelled = cancelled;
  }

  /** The reply to what the target asked; undefined for a request no client can be asked. */
  ask(request: PushedRequest): Promise<PushedReply> | undefined {
    if (!ASKABLE.has(request.method)) return undefined;
    if (this.#ended || this.#cancelled.aborted) return Promise.resolve(dismissed(request.method));
    const key = `idem-input-${this.#next++}`;
    // What the target asked is its output, and is scrubbed as its results are.
    const asked = this.#ctx.knownSecrets.redact({ method: request.method, params: request.params ?? {} });
    const { store } = this.#ctx;
    const id = this.#subject.executionId;
    return new Promise<PushedReply>((resolve) => {
      this.#waiting.set(key, { method: request.method, settle: resolve });
      this.#write(async () => {
        const kept = await store.addTaskInput(id, this.#token, { [key]: asked }, [
          taskInputAskedEvent(this.#subject, [key]),
        ]);
        if (!kept) return this.#settle(key, failure('the execution is no longer dispatched by this process'));
        this.#open = true;
        this.#ctx.taskChanges.changed(id);
        this.#watch();
      }).catch((error: unknown) =>
        this.#settle(key, failure(`the question could not be recorded for the task (${String(error)})`)),
      );
    });
  }

  /** The dispatch ended: what is still asked gets no answer now (the target already answered the call). */
  end(): void {
    this.#ended = true;
    for (const key of [...this.#waiting.keys()])
      this.#settle(key, failure('the call ended before the task was answered'));
    this.#clearIfIdle();
  }

  #settle(key: string, reply: PushedReply): void {
    const waiting = this.#waiting.get(key);
    if (!waiting) return;
    this.#waiting.delete(key);
    waiting.settle(reply);
  }

  #write(write: () => Promise<void>): Promise<void> {
    const done = this.#writes.then(write);
    this.#writes = done.catch(() => {});
    return done;
  }

  /** Once nothing is asked any more, the input is cleared: the answers are not kept (they may hold what a user typed). */
  #clearIfIdle(): void {
    const id = this.#subject.executionId;
    void this.#write(async () => {
      if (this.#waiting.size > 0 || !this.#open) return;
      await this.#ctx.store.setTaskInput(id, this.#token, null);
      this.#open = false;
      this.#ctx.taskChanges.changed(id);
    }).catch((error: unknown) =>
      this.#ctx.logger.warn("a task's answered input could not be cleared", {
        ref: id,
        error: String(error),
      }),
    );
  }

  /** Reads the answers (at once when given here, else at the task's poll interval) until none is awaited. */
  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    const id = this.#subject.executionId;
    let wake = () => {};
    this.#ctx.taskInputs.set(id, { wake: () => wake() });
    void (async () => {
      let failing = false;
      while (this.#waiting.size > 0) {
        try {
          const watch = await this.#ctx.store.watchTask(id);
          failing = false;
          if (this.#cancelled.aborted || watch?.cancelRequestedAt != null) {
            for (const [key, { method }] of [...this.#waiting]) this.#settle(key, dismissed(method));
            break;
          }
          const input = watch?.input;
          // Dispatched no longer here, or the input gone: the execution was taken over elsewhere.
          if (!input) {
            for (const key of [...this.#waiting.keys()])
              this.#settle(key, failure('the execution was taken over by another process'));
            break;
          }
          const open = new Set(openKeys(input));
          for (const key of [...this.#waiting.keys()])
            if (!open.has(key) && Object.hasOwn(input.answers, key))
              this.#settle(key, { result: input.answers[key] as Record<string, unknown> });
        } catch (error) {
          if (!failing)
            this.#ctx.logger.warn('a task waiting for input cannot read the store', {
              ref: id,
              error: String(error),
            });
          failing = true;
        }
        if (this.#waiting.size === 0) break;
        await untilPollOrWake(this.#ctx.tasks.pollIntervalMs, (w) => (wake = w), this.#cancelled);
      }
    })().finally(() => {
      this.#watching = false;
      this.#ctx.taskInputs.delete(id);
      this.#clearIfIdle();
      // A question asked while this watch ended is watched anew.
      if (this.#waiting.size > 0 && !this.#ended) this.#watch();
    });
  }
}

/** The answer to a question the task's client will not give now: dismissed. */
function dismissed(method: string): PushedReply {
  if (method === 'elicitation/create') return { result: { action: 'cancel' } };
  return failure('the task was cancelled before its client answered');
}

function failure(message: string): PushedReply {
  return { error: { code: -32603, message: `${message}; nothing was answered` } };
}
