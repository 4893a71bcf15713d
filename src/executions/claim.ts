import type { LadderVerdict } from '../approval/ladder.js';
import type { ResolvedContract } from '../contracts/contract.js';
import { IDEM_CODES } from '../errors.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer } from './answers.js';
import type { Approvals } from './approval.js';
import type { CallIdentity, ToolCall } from './call.js';
import { newToken } from './ids.js';
import { isStale } from './leases.js';
import {
  actionRecord,
  type ClaimPlan,
  callEvent,
  journal,
  type Next,
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
  replacing: string | undefined,
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
      ...(needsApproval ? { approval: approvals.request(call, verdict, replacing ?? null) } : {}),
    },
    {
      ...(replacing ? { replacing } : {}),
      events: [
        callEvent('received', call, id, { preview: identity.preview }),
        // The fingerprint lets verify catch a replaced one (it decides what a retry attaches to).
        callEvent('accepted', call, id, {
          ...actionRecord(call),
          ladder: verdict.step,
          fingerprint: identity.fingerprint,
        }),
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
  return { next: withHolder(claimed.record, call, identity) };
}

/** The step for the execution that holds the call's fingerprint: attach, replace, or conflict. */
function withHolder(prior: ExecutionRecord, call: ToolCall, identity: CallIdentity): Next {
  switch (match(prior, call, identity)) {
    case 'attach':
      return attach(prior, call);
    case 'replace':
      return { step: 'replace', id: prior.id };
    case 'conflict':
      return { step: 'conflict', record: prior };
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
): 'attach' | 'replace' | 'conflict' {
  if (!attachable(prior, call.contract)) return 'replace';
  // The request digest covers the actor too: under a shared key, another actor's call is
  // never "the same request", so it is never handed the original's result.
  if (identity.requestDigest === null || prior.requestDigest === identity.requestDigest) return 'attach';
  // The target said no, so nothing took effect: a corrected call is a new attempt of the
  // action (docs/lifecycle.md, step 7, row "failed"), not a second one.
  if (prior.state === 'failed') return 'replace';
  return 'conflict';
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

export function attachable(prior: ExecutionRecord, contract: ResolvedContract): boolean {
  if (prior.readAt >= prior.attachUntil) return false;
  // A repeat after a delivered result is a deliberate new action for such tools (e.g. deploy again).
  if (contract.afterCompletion === 'new' && prior.state === 'completed' && prior.deliveredAt !== null)
    return false;
  return true;
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
