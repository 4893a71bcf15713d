import {
  DispatchRefusedError,
  IDEM_CODES,
  messageOf,
  NotDispatchedError,
  OutcomeUnknownError,
} from '../errors.js';
import { secretValues } from '../identity/redaction.js';
import { upstreamTaskEvent } from '../journal/task-events.js';
import type { ToolResult } from '../store/outcome.js';
import type { UpstreamTaskHandle } from '../store/types.js';
import { MAX_JSON_DEPTH, withinDepth } from '../support/json-depth.js';
import { idemAnswer, META } from './answers.js';
import type { Dispatch, PushedRequest, ToolCall } from './call.js';
import { PushedInput } from './pushed-input.js';
import { callEvent, type Next, type StepContext } from './step-context.js';
import { waitForInput, watchTaskCancel } from './task-watch.js';

/** What the dispatch came to: its outcome, as the channel gave it. */
export interface Done {
  /** `denied`: the channel refused the call before anything left, and the dispatch was never recorded. */
  outcome: 'completed' | 'failed' | 'unknown' | 'denied';
  result?: ToolResult;
  notDispatched?: 'not_dispatched' | 'refused';
  /** Why the outcome is unknown, when the channel said (a timeout, a redirect it would not follow). */
  detail?: string;
  /**
   * Unknown because the process is closing while it followed the target's own task: nothing is
   * recorded, and the lease lapses, so that the next holder follows the task again (resume.ts).
   */
  left?: true;
}

/**
 * What the caller hears first: the outcome, or the end of its wait (the contract's
 * timeout, or its own cancel) while the work goes on — `work` then still brings
 * the outcome, to be recorded when it comes.
 */
export type Sent = {
  /** Secret argument values, taken before the handler ran: what is stored never holds them. */
  secrets: ReturnType<typeof secretValues>;
} & ({ first: 'outcome'; done: Done } | { first: 'timeout' | 'cancelled' | 'task'; work: Promise<Done> });

/**
 * Dispatches while holding the lease, renewing it as the target works. The
 * caller gets an answer by the contract's timeout at the latest; the work
 * goes on, and its real outcome is recorded when it arrives (record-outcome.ts).
 */
export async function send(
  ctx: StepContext,
  call: ToolCall,
  dispatching: Extract<Next, { step: 'dispatch' }>,
  dispatch: Dispatch,
): Promise<Sent> {
  const { record, token, redispatch } = dispatching;
  const { leaseMs, timeoutMs } = call.contract;
  // Taken before the handler runs: it may consume (and clear) its secret arguments.
  const secrets = secretValues(call.arguments, call.contract.argumentRules);
  const renewal = setInterval(
    () => {
      ctx.store.renewLease(record.id, token, leaseMs).catch((error) => {
        ctx.logger.warn('lease renewal failed', { ref: record.id, error: String(error) });
      });
    },
    Math.max(10, Math.floor(leaseMs / 3)),
  );
  renewal.unref();

  // Credentials the channel resolves are known only once it has: what it hands back, or says
  // in an error, is scrubbed of them before anyone — caller, store, log — sees it.
  const scrub = <T>(value: T): T => ctx.knownSecrets.redact(value);
  // A call that may become a task can be cancelled by it (tasks/cancel) while it runs here.
  const mayBeTask = call.task !== undefined && call.contract.task !== 'off';
  const taskCancel = mayBeTask ? new AbortController() : undefined;
  if (taskCancel) ctx.taskCancels.set(record.id, taskCancel);
  // Once the target's own task is on the record, a gateway that resumes can follow it (resume.ts).
  let following = false;
  const upstreamTask = async (handle: UpstreamTaskHandle) => {
    following = (await recordUpstreamTask(ctx, call, record.id, token, handle)) || following;
    // The task is on the record: a closing process need not wait for it (the next one follows it).
    if (following) ctx.inFlight.leaveToNext(call);
  };
  // A 2025-11-25 client asked for the task itself (params.task): it is answered with one at once.
  const taskAfterMs = call.task?.generation === 'v1' ? 0 : call.contract.taskAfterMs;
  // From when the caller has its task on: input the target asks for is the task's client's to give,
  // and a cancel of it answered by any gateway of the fleet reaches this dispatch (task-watch.ts).
  let isTask = false;
  let stopWatching = () => {};
  const becameTask = () => {
    isTask = true;
    if (taskCancel) stopWatching = watchTaskCancel(ctx, record.id, taskCancel);
  };
  if (mayBeTask && taskAfterMs === 0) becameTask();
  const subject = { executionId: record.id, actor: call.caller.actor, tool: call.tool };
  // Not yet marked dispatched (the channel checks before sending): the channel says when it sends.
  const markDispatched =
    record.state === 'dispatched'
      ? undefined
      : async () => {
          if (!(await markSending(ctx, call, record, token)))
            throw new NotDispatchedError('The dispatch could not be recorded, so nothing was sent.');
        };
  const askInput =
    taskCancel &&
    ((requests: Record<string, { method: string; params?: unknown }>) =>
      isTask ? waitForInput(ctx, subject, token, requests, taskCancel.signal) : Promise.resolve(undefined));
  // What the target pushes while it works, once the call is a 2026-07-28 task, is the task's input.
  const pushed =
    taskCancel && call.task?.generation === 'v2'
      ? new PushedInput(ctx, subject, token, taskCancel.signal)
      : undefined;
  const askPushed = pushed && ((request: PushedRequest) => (isTask ? pushed.ask(request) : undefined));
  const work = (async (): Promise<Done> => {
    try {
      const sending = {
        executionId: record.id,
        redispatch,
        upstreamTask,
        ...(taskCancel ? { signal: taskCancel.signal } : {}),
        ...(askInput ? { askInput } : {}),
        ...(askPushed ? { askPushed } : {}),
        ...(markDispatched ? { sending: markDispatched } : {}),
      };
      const result = received(ctx, call, await dispatch(sending));
      return { outcome: result.isError ? 'failed' : 'completed', result };
    } catch (error) {
      if (error instanceof NotDispatchedError) {
        const refused = error instanceof DispatchRefusedError;
        const answer = notDispatchedAnswer(error, scrub, record.id);
        // A re-send under the same key that did not leave leaves the first one's uncertainty as it was.
        if (redispatch) return { outcome: 'unknown', detail: scrub(error.message) };
        // Refused before anything left, by a check of the channel's: a denial, not a failed dispatch.
        if (refused)
          return {
            outcome: 'denied',
            result: answer,
            notDispatched: 'refused',
            detail: scrub(error.message),
          };
        return { outcome: 'failed', result: answer, notDispatched: 'not_dispatched' };
      }
      if (error instanceof OutcomeUnknownError) {
        if (following && ctx.closing.value)
          return { outcome: 'unknown', detail: scrub(error.message), left: true };
        // The target's JSON-RPC error, when it answered with one, is kept with the unknown outcome —
        // or is the target's failure, where the contract says the tool answers one only before it acts.
        const answered = error.answeredWith && scrub(error.answeredWith);
        const result: ToolResult | undefined = answered && {
          isError: true,
          content: [{ type: 'text', text: answered.message }],
          _meta: { [META.jsonrpcError]: answered },
        };
        if (result && call.contract.jsonrpcErrors === 'failed') return { outcome: 'failed', result };
        return { outcome: 'unknown', detail: scrub(error.message), ...(result ? { result } : {}) };
      }
      if (isAbort(error)) return { outcome: 'unknown' };
      return {
        outcome: 'failed',
        result: { isError: true, content: [{ type: 'text', text: scrub(messageOf(error)) }] },
      };
    }
  })().finally(() => {
    clearInterval(renewal);
    stopWatching();
    pushed?.end();
    if (taskCancel) ctx.taskCancels.delete(record.id);
  });

  // Whichever comes first decides what the caller hears: the outcome, or the end of the wait.
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<'timeout' | 'cancelled'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref();
    // The caller cancelled after dispatch (docs/protocol.md): the effect may happen anyway, so the
    // outcome is unknown — not failed — and is recorded when (if) the target answers.
    onAbort = () => resolve('cancelled');
    call.signal?.addEventListener('abort', onAbort, { once: true });
  });
  // A caller that can take a task is answered with one once task_after has passed (at once for 0s).
  let taskTimer: NodeJS.Timeout | undefined;
  const becomesTask = !mayBeTask
    ? undefined
    : taskAfterMs === 0
      ? Promise.resolve('task' as const)
      : new Promise<'task'>((resolve) => {
          // Not while the caller's client holds questions it was asked in this call's answer (call.ts, TaskHold).
          const hold = call.task?.hold;
          taskTimer = setTimeout(
            () => (hold ? hold.whenFree(() => resolve('task')) : resolve('task')),
            taskAfterMs,
          );
          taskTimer.unref();
        });
  const first = await Promise.race(becomesTask ? [work, deadline, becomesTask] : [work, deadline]);
  clearTimeout(timer);
  clearTimeout(taskTimer);
  // The work may have ended meanwhile (its finally ran): then there is nothing left to watch.
  if (first === 'task' && ctx.taskCancels.get(record.id) === taskCancel) becameTask();
  if (onAbort) call.signal?.removeEventListener('abort', onAbort);
  if (typeof first === 'string') return { secrets, first, work };
  return { secrets, first: 'outcome', done: first };
}

/**
 * The dispatch on the record and journal, as a channel that checks before sending is about to send
 * (ActionDispatch.sending): false when the write did not land (the lease was lost, the store is
 * down), and then nothing may be sent.
 */
async function markSending(
  ctx: StepContext,
  call: ToolCall,
  record: Extract<Next, { step: 'dispatch' }>['record'],
  token: string,
): Promise<boolean> {
  const moved = await ctx.store
    .transition({
      id: record.id,
      from: [record.state],
      to: 'dispatched',
      token,
      dispatchTimeoutMs: call.contract.timeoutMs,
      // From `authorized`: taken over after an approval, which take-over.ts journals as resumed.
      events: [
        callEvent('dispatched', call, record.id, record.state === 'accepted' ? {} : { resumed: true }),
      ],
    })
    .catch((error: unknown) => {
      ctx.logger.warn('the dispatch could not be recorded; nothing was sent', {
        ref: record.id,
        error: String(error),
      });
      return undefined;
    });
  return moved !== undefined;
}

/**
 * The target's own task on the execution's record and journal (one write, by the lease holder),
 * before the channel follows it: an operator (and, after a restart, whoever resumes the
 * following) can see which task the effect runs as. A write that fails is logged, not thrown
 * (false): the task runs on the target either way, and following it is the only way to learn its
 * outcome.
 */
async function recordUpstreamTask(
  ctx: StepContext,
  call: ToolCall,
  executionId: string,
  token: string,
  handle: UpstreamTaskHandle,
): Promise<boolean> {
  const subject = { executionId, actor: call.caller.actor, tool: call.tool };
  try {
    const kept = await ctx.store.setUpstreamTask(executionId, token, handle, [
      upstreamTaskEvent(subject, handle),
    ]);
    if (!kept)
      ctx.logger.warn('the upstream task was not recorded: the lease was lost', { ref: executionId });
    return kept;
  } catch (error) {
    ctx.logger.warn('the upstream task could not be recorded', { ref: executionId, error: String(error) });
    return false;
  }
}

/**
 * A read-only call: nothing is claimed or recorded, but the caller hears what
 * a claimed call would of a request that never left — refused (IDEM_DENIED)
 * or not sent (IDEM_NOT_EXECUTED) — and gets nothing a credential's value
 * is in: a read's answer may echo what was sent, as a write's may. A read
 * sent and not answered is a plain error, since a read changes nothing and
 * may simply be repeated. Anything else the dispatch throws is the caller's,
 * as it was (the MCP SDK turns it into an error result, or a protocol error).
 */
export async function dispatchReadOnly(
  ctx: StepContext,
  call: ToolCall,
  dispatch: Dispatch,
): Promise<ToolResult> {
  const scrub = <T>(value: T): T => ctx.knownSecrets.redact(value);
  try {
    return received(ctx, call, await dispatch({ executionId: null, redispatch: false }));
  } catch (error) {
    if (error instanceof NotDispatchedError) return notDispatchedAnswer(error, scrub, undefined);
    if (error instanceof OutcomeUnknownError)
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: `${scrub(error.message)} The tool only reads, so calling it again is safe.`,
          },
        ],
      };
    throw error;
  }
}

/**
 * What is done to every result a dispatch hands back, claimed or read-only: cut
 * to the depth that can be stored and sent (support/json-depth.ts; an answer
 * nested thousands deep would be neither), saying so on the log when it was —
 * an answer deeper than that, but not so deep that it broke, used to pass
 * unchanged — then scrubbed of the credentials the channel resolved.
 */
function received(ctx: StepContext, call: ToolCall, result: ToolResult): ToolResult {
  const kept = withinDepth(result);
  if (kept !== result)
    ctx.logger.warn(`a result nested deeper than ${MAX_JSON_DEPTH} levels was cut there`, {
      tool: call.tool,
    });
  return ctx.knownSecrets.redact(kept);
}

/** What a caller hears of a dispatch that never left: refused by a check, or not sent at all. */
function notDispatchedAnswer(
  error: NotDispatchedError,
  scrub: (text: string) => string,
  ref: string | undefined,
): ToolResult {
  const code = error instanceof DispatchRefusedError ? IDEM_CODES.IDEM_DENIED : IDEM_CODES.IDEM_NOT_EXECUTED;
  return idemAnswer(code, { ...(ref ? { ref } : {}), detail: scrub(error.message) });
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
