import type { ToolResult } from '../store/outcome.js';
import { type Approvals, askApprover, refusedByLadder, waitForApproval } from './approval.js';
import { dispatchWhenApproved } from './approved-task.js';
import type { CallIdentity, Dispatch, ToolCall } from './call.js';
import { claim, keyConflict } from './claim.js';
import { send } from './dispatch.js';
import { answerFor } from './record-answer.js';
import { recordOutcome } from './record-outcome.js';
import { expireLease, recover } from './recovery.js';
import { type ClaimPlan, journal, type Next, type ReplaceReason, type StepContext } from './step-context.js';
import { takeOverUndispatched } from './take-over.js';
import { answerAsTask, answersAsTask } from './tasks.js';

/** Claims lost to other callers, one after another, before this call gives up (nothing started). */
const MAX_SETTLE_ATTEMPTS = 8;

/** What the sequence runs on: the steps' context, who to ask for approval, how to name an execution. */
export interface SequenceParts {
  ctx: StepContext;
  approvals: Approvals;
  newId: () => string;
}

/**
 * The engine's fixed sequence for one identified call with effects
 * (docs/lifecycle.md, steps 5–12), in one place: the approval ladder → claim
 * the intent, or match the execution that holds it → approve → dispatch →
 * record the outcome → answer (recording its delivery). Each step does its
 * part and returns the step that comes next (step-context.ts, `Next`); none
 * calls another. A step that lost a compare-and-set to another caller says
 * `retry`: the intent is claimed again, and the store hands back who won.
 *
 * `claimed` is set when the answer comes from this call's own new execution.
 * Undefined: too many races were lost, and nothing was started.
 */
export async function runSequence(
  { ctx, approvals, newId }: SequenceParts,
  call: ToolCall,
  identity: CallIdentity,
  dispatch: Dispatch,
  plan: ClaimPlan,
): Promise<{ answer: ToolResult; claimed?: string } | undefined> {
  // The ladder first (docs/approvals.md): it decides whether the claim waits for approval, or is refused.
  const verdict = await approvals.verdict(ctx, call);
  if (verdict.decision === 'deny') return { answer: await refusedByLadder(ctx, call, verdict) };
  let replacing: { id: string; reason?: ReplaceReason } | undefined = plan.replacing
    ? { id: plan.replacing }
    : undefined;
  for (let attempt = 0; attempt < MAX_SETTLE_ATTEMPTS; attempt++) {
    const claimed = await claim(ctx, approvals, call, identity, verdict, newId(), replacing, plan);
    replacing = undefined;
    let next: Next = claimed.next;
    for (;;) {
      switch (next.step) {
        case 'ask':
          next = await askApprover(ctx, approvals, next.record, call);
          continue;
        case 'wait':
          next = await waitForApproval(ctx, next.record, next.events);
          continue;
        case 'take_over':
          next = await takeOverUndispatched(ctx, next.record, call, next.events);
          continue;
        case 'expire':
          next = await expireLease(ctx, next.record, next.events);
          continue;
        case 'recover':
          next = await recover(ctx, next.record, call, next.events);
          continue;
        case 'dispatch':
          next = await recordOutcome(ctx, call, next, await send(ctx, call, next, dispatch));
          continue;
        case 'conflict':
          return { answer: await keyConflict(ctx, next.record, call) };
        case 'answer':
          if (answersAsTask(call, next.record)) {
            await journal(ctx, next.events ?? []);
            const task = await answerAsTask(ctx, call, next.record);
            // Its client polls the task and will not call again: this process dispatches it once approved.
            if (next.record.state === 'awaiting_approval')
              dispatchWhenApproved(ctx, call, next.record, dispatch);
            return settled(task, claimed.won);
          }
          return settled(await answerFor(ctx, next.record, next.events, next.detail), claimed.won);
        case 'settled':
          return settled(next.answer, claimed.won);
        case 'replace':
          replacing = { id: next.id, reason: next.reason };
          break;
        case 'retry':
          break;
      }
      break;
    }
  }
  return undefined;
}

function settled(answer: ToolResult, claimed: string | undefined): { answer: ToolResult; claimed?: string } {
  return claimed === undefined ? { answer } : { answer, claimed };
}
