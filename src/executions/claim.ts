import type { LadderVerdict } from '../approval/ladder.js';
import { IDEM_CODES } from '../errors.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer } from './answers.js';
import type { Approvals } from './approval.js';
import type { CallIdentity, ToolCall } from './call.js';
import { newToken } from './ids.js';
import { isStale } from './leases.js';
import type { SessionView } from './session-order.js';
import {
  actionRecord,
  type ClaimPlan,
  callEvent,
  journal,
  type Next,
  type ReplaceReason,
  type StepContext,
} from './step-context.js';

/**
 * Claims the intent under a new execution `id` (docs/lifecycle.md, step 6): for a new intent (the
 * common case) the one INSERT is the whole lookup. On a conflict the store hands back the holder,
 * and the next step is what this call does with it (match). `won` is set when the claim is this
 * call's own.
 */
export async function claim(
  ctx: StepContext,
  approvals: Approvals,
  call: ToolCall,
  identity: CallIdentity,
  verdict: LadderVerdict,
  id: string,
  replacing: { id: string; reason?: ReplaceReason } | undefined,
  plan: ClaimPlan,
): Promise<{ next: Next; won?: string }> {
  const contract = call.contract;
  const needsApproval = verdict.decision === 'ask';
  const token = newToken();
  // With nothing between them, accepting and marking the dispatch are one write:
  // both are durable before the handler runs, and the hot path saves a transaction.
  const claimed = await ctx.store.claim(
    {
      id,
      fingerprint: identity.fingerprint,
      requestDigest: identity.requestDigest,
      actor: call.caller.actor,
      tool: call.tool,
      session: call.caller.session,
      replay: contract.replay,
      state: needsApproval ? 'awaiting_approval' : 'dispatched',
      ...(needsApproval ? {} : { dispatchTimeoutMs: contract.timeoutMs }),
      attachWindowMs: contract.attachWindowMs,
      claimToken: token,
      leaseOwner: ctx.owner,
      leaseMs: contract.leaseMs,
      argumentsPreview: identity.preview,
      ...(needsApproval ? { approval: approvals.request(call, verdict, replacing?.id ?? null) } : {}),
    },
    {
      ...(replacing ? { replacing: replacing.id } : {}),
      events: [
        callEvent('received', call, id, { preview: identity.preview }),
        // The fingerprint lets verify catch a replaced one (it decides what a retry attaches to).
        callEvent('accepted', call, id, {
          ...actionRecord(call),
          ladder: verdict.step,
          fingerprint: identity.fingerprint,
        }),
        ...(replacing?.reason ? replaced(call, id, replacing.id, replacing.reason) : []),
        ...(plan.events?.(id) ?? []),
        callEvent(needsApproval ? 'awaiting_approval' : 'dispatched', call, id),
      ],
    },
  );
  if (claimed.won) {
    plan.won?.(id);
    const record = claimed.record;
    return {
      won: id,
      next:
        record.state === 'dispatched'
          ? { step: 'dispatch', record, token, redispatch: false }
          : { step: 'ask', record },
    };
  }
  plan.seen.record = claimed.record;
  if (!claimed.record) return { next: { step: 'retry' } };
  return { next: withHolder(claimed.record, call, identity, plan) };
}

/**
 * The link between a new execution and the one it replaces, journaled with the claim on both
 * (`idem executions show` of either names the other; the status tool's repeat follows it).
 */
function replaced(call: ToolCall, id: string, prior: string, reason: ReplaceReason) {
  return [
    callEvent('repeat', call, id, { repeat_of: prior, reason }),
    callEvent('repeat', call, prior, { repeated_by: id, reason }),
  ];
}

/** The step for the execution that holds the call's fingerprint: attach, replace, or conflict. */
function withHolder(prior: ExecutionRecord, call: ToolCall, identity: CallIdentity, plan: ClaimPlan): Next {
  const matched = match(prior, call, identity, plan.session);
  switch (matched) {
    case 'attach':
      return attach(prior, call);
    case 'conflict':
      return { step: 'conflict', record: prior };
    default:
      return { step: 'replace', id: prior.id, reason: matched.replace };
  }
}

/**
 * What a call does with the execution that holds its fingerprint: attach to it (docs/lifecycle.md, step 7
 * table), replace it with a new execution, or — a business key used for another request —
 * get a conflict answer and send nothing.
 */
export function match(
  prior: ExecutionRecord,
  call: ToolCall,
  identity: CallIdentity,
  session?: SessionView,
): 'attach' | 'conflict' | { replace: ReplaceReason } {
  const notAttachable = replaceReason(prior, call, session);
  if (notAttachable) return { replace: notAttachable };
  // The request digest covers the actor too: under a shared key, another actor's call is
  // never "the same request", so it is never handed the original's result.
  if (identity.requestDigest === null || prior.requestDigest === identity.requestDigest) return 'attach';
  // Another request under the key (a failed holder was replaced above, unless failures are kept).
  return 'conflict';
}

/**
 * Why `prior` is not attached to by this call, if it is not (docs/contracts.md, "Retry, repeat,
 * new action"): the one home of the rule that tells a retry from a new action.
 */
export function replaceReason(
  prior: ExecutionRecord,
  call: ToolCall,
  session?: SessionView,
): ReplaceReason | undefined {
  const contract = call.contract;
  if (prior.readAt >= prior.attachUntil) return 'window_passed';
  // A key the caller named (a gateway in front sends its execution id) is that one action, always.
  if (call.idempotencyKey !== undefined) return undefined;
  // The target said no, so nothing took effect, and every call that reaches the engine is a new
  // request (a resent one is answered by its receipt): a new attempt, not a second action. Under a
  // business key too, with the same arguments or corrected ones.
  if (prior.state === 'failed' && contract.afterFailure === 'new') return 'after_failure';
  if (prior.state !== 'completed' || prior.deliveredAt === null) return undefined;
  // A repeat after a delivered result is a deliberate new action for such tools (e.g. deploy again).
  if (contract.afterCompletion === 'new') return 'after_delivery';
  if (contract.afterCompletion === 'new_if_moved_on' && session?.movedOnSince(prior.id)) return 'moved_on';
  return undefined;
}

/** The key already names an execution of another request: say so, with its ref, and send nothing. */
export async function keyConflict(
  ctx: StepContext,
  prior: ExecutionRecord,
  call: ToolCall,
): Promise<ToolResult> {
  const byOther = prior.actor !== call.caller.actor;
  await journal(ctx, [
    callEvent('attached', call, prior.id, {
      state: prior.state,
      conflict: byOther ? 'another_actor' : 'other_arguments',
    }),
  ]);
  return idemAnswer(IDEM_CODES.IDEM_KEY_CONFLICT, {
    ref: prior.id,
    state: prior.state,
    statusTool: ctx.statusTool,
    detail: byOther
      ? 'The key was used by another caller; only that caller (and an operator) can read its outcome.'
      : 'The key was used with other arguments.',
  });
}

/** A matching prior execution exists: the table in docs/lifecycle.md, step 7, row by row. */
export function attach(prior: ExecutionRecord, call: ToolCall): Next {
  const events = [callEvent('attached', call, prior.id, { state: prior.state })];
  switch (prior.state) {
    case 'accepted':
    case 'authorized':
      // Approved by a human (or never dispatched, its claimer gone): this same execution proceeds, once.
      return { step: 'take_over', record: prior, events };
    case 'awaiting_approval':
      return { step: 'wait', record: prior, events };
    case 'dispatched':
      return isStale(prior)
        ? { step: 'expire', record: prior, events }
        : { step: 'answer', record: prior, events };
    case 'unknown':
      return { step: 'recover', record: prior, events };
    case 'denied':
    case 'completed':
    case 'failed':
      return { step: 'answer', record: prior, events };
  }
}
