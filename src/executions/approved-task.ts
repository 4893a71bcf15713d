import { expireIfDue } from '../approval/decide.js';
import type { ExecutionRecord } from '../store/types.js';
import type { Dispatch, ToolCall } from './call.js';
import { send } from './dispatch.js';
import { recordOutcome } from './record-outcome.js';
import { callEvent, type StepContext } from './step-context.js';
import { takeOverUndispatched } from './take-over.js';
import { heldHere, onApprovalDecided } from './task-approval.js';
import { untilPollOrWake } from './task-watch.js';

/**
 * A call answered as a task while its execution awaits approval (docs/tasks.md, "Approval"): its
 * client polls `tasks/get` and will not call again, so the process that answered it keeps the call
 * and its dispatch, waits for the decision and, once approved, takes the execution over and
 * dispatches it as the sequence would (sequence.ts: take_over → dispatch → record the outcome).
 *
 * The decision is seen at once when this process makes it (a `tasks/update`, a library approve),
 * else by reading the store at the task's poll interval (another gateway of the fleet, the CLI,
 * the console). The wait ends with the decision: approved, denied, expired (judged here by the
 * store's clock, as everywhere), or the task cancelled. The take-over is a compare-and-set, so a
 * client that also calls again makes no second dispatch. In the background: nothing awaits it,
 * and it settles on every path, a store failure included (logged).
 */
export function dispatchWhenApproved(
  ctx: StepContext,
  call: ToolCall,
  record: ExecutionRecord,
  dispatch: Dispatch,
): void {
  // One holder per process: a duplicate of the intent answered here is the same task.
  if (heldHere(ctx, record.id)) return;
  const wait = untilDecided(ctx, call, record);
  void wait
    .then((approved) => approved && runApproved(ctx, asTaskCall(call), approved, dispatch))
    .catch((error: unknown) =>
      ctx.logger.warn('an approved task could not be dispatched', { ref: record.id, error: String(error) }),
    );
}

/**
 * The call as it runs now: already answered as a task (its outcome is the task's, recorded when it
 * comes and delivered through tasks/get), no longer cancellable by its answered request, and no
 * approver to ask again.
 */
function asTaskCall(call: ToolCall): ToolCall {
  const { signal: _signal, approver: _approver, ...rest } = call;
  return { ...rest, contract: { ...call.contract, task: 'required', taskAfterMs: 0 } };
}

/** The authorized record once approved; undefined once denied, expired, cancelled, or given up on. */
async function untilDecided(
  ctx: StepContext,
  call: ToolCall,
  record: ExecutionRecord,
): Promise<ExecutionRecord | undefined> {
  let wake = () => {};
  const stop = onApprovalDecided(ctx, record.id, () => wake());
  // A store that cannot be read is tried again until the approval would have expired anyway.
  const giveUpAt = Date.now() + call.contract.approvalTimeoutMs + ctx.tasks.pollIntervalMs;
  let failing = false;
  try {
    for (;;) {
      try {
        const now = await ctx.store.get(record.id);
        failing = false;
        if (!now) return undefined;
        if (now.state === 'authorized') return (await cancelled(ctx, call, now)) ? undefined : now;
        if (now.state !== 'awaiting_approval') return undefined;
        if ((await expireIfDue(ctx.store, now)).decided) return undefined;
      } catch (error) {
        if (Date.now() > giveUpAt) throw error;
        if (!failing) ctx.logger.warn('a task awaiting approval cannot read the store', { ref: record.id });
        failing = true;
      }
      await untilPollOrWake(ctx.tasks.pollIntervalMs, (w) => (wake = w));
    }
  } finally {
    stop();
  }
}

/** The caller's task was cancelled (tasks/cancel retires the execution too; this covers the race). */
async function cancelled(ctx: StepContext, call: ToolCall, record: ExecutionRecord): Promise<boolean> {
  const task = await ctx.store.findTask(record.id, call.caller.actor);
  return task !== undefined && task.cancelRequestedAt !== null;
}

async function runApproved(
  ctx: StepContext,
  call: ToolCall,
  record: ExecutionRecord,
  dispatch: Dispatch,
): Promise<void> {
  const next = await takeOverUndispatched(ctx, record, call, []);
  // Another caller of the intent took it over first (its re-issued call, another gateway): it runs there.
  if (next.step !== 'dispatch') return;
  if (await cancelled(ctx, call, next.record)) {
    // Cancelled between the decision and the take-over: it is retired unsent, as the cancel said.
    await ctx.store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'failed',
      token: next.token,
      holder: null,
      release: true,
      note: 'cancelled by its task (tasks/cancel) before it was sent',
      events: [callEvent('outcome', call, record.id, { state: 'failed', reason: 'cancelled' })],
    });
    return;
  }
  await recordOutcome(ctx, call, next, await send(ctx, call, next, dispatch));
}
