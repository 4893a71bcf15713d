import { decideApproval, expireIfDue } from '../approval/decide.js';
import { evaluateLadder, type LadderVerdict } from '../approval/ladder.js';
import { approvalView } from '../approval/view.js';
import { IDEM_CODES, StoreUnavailableError } from '../errors.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ToolResult } from '../store/outcome.js';
import {
  APPROVAL_CHANNELS,
  type ApprovalChannel,
  type ApprovalRequestInput,
  type ExecutionRecord,
} from '../store/types.js';
import { idemAnswer } from './answers.js';
import type { Approver, ApproverAnswer, Logger, ToolCall } from './call.js';
import { journal, type Next, type StepContext } from './step-context.js';

/**
 * The engine's side of approvals (docs/approvals.md): the ladder's verdict for a call, and who to
 * ask when it says "ask". The decision itself lives in the store (see
 * approval/decide.ts), so it holds across processes and restarts.
 */
export class Approvals {
  readonly #approver: Approver | undefined;
  readonly #logger: Logger;

  constructor(approver: Approver | undefined, logger: Logger) {
    this.#approver = approver;
    this.#logger = logger;
  }

  verdict(ctx: StepContext, call: ToolCall): Promise<LadderVerdict> {
    return evaluateLadder(ctx.store, {
      tool: call.tool,
      actor: call.caller.actor,
      session: call.caller.session,
      policy: call.contract.approval,
      allowActors: call.contract.allowActors,
      ...(call.unresolved !== undefined ? { unresolved: call.unresolved } : {}),
    });
  }

  /** The approval request a claim that asks writes with it. */
  request(call: ToolCall, verdict: LadderVerdict, earlier: string | null): ApprovalRequestInput {
    return {
      policy: verdict.step === 'every_call' ? 'every_call' : 'session',
      channel: call.channel,
      target: call.target,
      credentialRef: call.credentialRef,
      earlier,
      expiresInMs: call.contract.approvalTimeoutMs,
    };
  }

  /** The call's own approver (elicitation), else the engine's; none, or a throw, is `pending`. */
  async ask(ctx: StepContext, call: ToolCall, record: ExecutionRecord): Promise<ApproverAnswer> {
    const approver = call.approver ?? this.#approver;
    if (!approver) return 'pending';
    try {
      const request = await ctx.store.getApproval(record.id);
      if (!request) return 'pending';
      const view = approvalView(record, request);
      return await approver({ ...view, executionId: record.id, argumentsPreview: record.argumentsPreview });
    } catch (error) {
      this.#logger.warn('approver failed; the request stays in the queue', {
        ref: record.id,
        error: String(error),
      });
      return 'pending';
    }
  }
}

/**
 * The ladder refused the call before anything was claimed. An unreachable
 * store is the engine's fail-closed path (not executed, safe to retry); an
 * unresolved target or credential is a denial, journaled with its reason.
 */
export async function refusedByLadder(
  ctx: StepContext,
  call: ToolCall,
  verdict: Extract<LadderVerdict, { decision: 'deny' }>,
): Promise<ToolResult> {
  if (verdict.step === 'store_unavailable') throw new StoreUnavailableError(verdict.reason);
  await journal(ctx, [
    {
      kind: 'denied',
      executionId: null,
      actor: call.caller.actor,
      tool: call.tool,
      requestRef: call.caller.requestRef ?? null,
      detail: { ladder: verdict.step, reason: verdict.reason },
    },
  ]);
  return idemAnswer(IDEM_CODES.IDEM_DENIED, { detail: `Reason: ${verdict.reason}` });
}

/**
 * This call won a claim that waits for approval: ask the approver and record its decision. Approved
 * (by it, or by whoever decided first), the execution is taken over next; no answer yet, the caller
 * is told it waits.
 */
export async function askApprover(
  ctx: StepContext,
  approvals: Approvals,
  record: ExecutionRecord,
  call: ToolCall,
): Promise<Next> {
  const answer = decisionOf(await approvals.ask(ctx, call, record));
  if (answer === undefined) return { step: 'answer', record };
  const result = await decideApproval(ctx.store, record.id, answer.decision, {
    by: answer.by ?? 'approver',
    via: APPROVAL_CHANNELS.includes(answer.via as ApprovalChannel) ? (answer.via as ApprovalChannel) : 'api',
    ...(typeof answer.reason === 'string' ? { reason: answer.reason } : {}),
  });
  // Lost to another decider (an operator, an expiry): what they decided stands.
  return { step: 'take_over', record: result.record ?? record, events: [] };
}

/** An approver's answer as a decision; undefined for `pending` and for anything it should not have said. */
function decisionOf(answer: ApproverAnswer): Exclude<ApproverAnswer, string> | undefined {
  const decided = typeof answer === 'string' ? { decision: answer } : answer;
  if (decided?.decision !== 'approved' && decided?.decision !== 'denied') return undefined;
  return decided as Exclude<ApproverAnswer, string>;
}

/**
 * A call attached to an execution awaiting approval: the original record, no
 * new prompt — unless its time ran out (then it is denied, `expired`, and
 * this caller is told so) or it was decided meanwhile (then settle again).
 */
export async function waitForApproval(
  ctx: StepContext,
  prior: ExecutionRecord,
  events: ActivityEventInput[],
): Promise<Next> {
  const expiry = await expireIfDue(ctx.store, prior);
  if (expiry.decided) return { step: 'answer', record: expiry.record, events };
  const current = expiry.record ?? prior;
  if (current.state === 'awaiting_approval') return { step: 'answer', record: current, events };
  return { step: 'retry' };
}
