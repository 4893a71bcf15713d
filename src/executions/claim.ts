import type { ResolvedContract } from '../contracts/contract.js';
import { IDEM_CODES } from '../errors.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer } from './answers.js';
import { type Approvals, attachWaiting, refusedByLadder, runAuthorized, runClaimed } from './approval.js';
import type { CallIdentity, Dispatch, ToolCall } from './call.js';
import { type Attempt, actionRecord, callEvent, type EngineCore, journal, RETRY } from './core.js';
import { answerFor } from './describe.js';
import { runDispatch } from './dispatch.js';
import { newToken } from './ids.js';
import { isStale } from './leases.js';
import type { ToolResult } from './outcome.js';
import { expire, recover } from './recovery.js';

const MAX_SETTLE_ATTEMPTS = 8;

/** What claiming needs beyond the core: how to ask for approval, and how to name a new execution. */
export interface Claimer {
  core: EngineCore;
  approvals: Approvals;
  newId: () => string;
}

/** How one claim loop differs: a plain call, or a deliberate repeat of an earlier execution. */
export interface ClaimPlan {
  /** An execution the first claim retires in the same write (a repeat retires the one it repeats). */
  replacing?: string;
  /** Events journaled with the claim, after `received` and `accepted`. */
  events?: (id: string) => ActivityEventInput[];
  /** Called once this call won the claim for `id`, before it is dispatched. */
  won?: (id: string) => void;
  /** Set to the last record of this intent seen (see the callers' store-failure answers). */
  seen: { record?: ExecutionRecord };
}

/**
 * Claims the intent, or attaches to (replaces, or conflicts with) the execution
 * that holds it, until one of those gives an answer. `claimed` is set when the
 * answer comes from this call's own new execution. Undefined: too many races
 * were lost, nothing was started.
 */
export async function claimAndRun(
  { core, approvals, newId }: Claimer,
  call: ToolCall,
  identity: CallIdentity,
  dispatch: Dispatch,
  plan: ClaimPlan,
): Promise<{ answer: ToolResult; claimed?: string } | undefined> {
  const contract = call.contract;
  // The ladder first (docs/approvals.md): it decides whether the claim waits for approval, or is refused.
  const verdict = await approvals.verdict(core, call);
  if (verdict.decision === 'deny') return { answer: await refusedByLadder(core, call, verdict) };
  const needsApproval = verdict.decision === 'ask';
  // Claim first: for a new intent (the common case) the one INSERT is the whole lookup.
  // On a conflict the store hands back the holder, which this call then attaches to — or,
  // if it can no longer be attached to, replaces in the next claim.
  let replacing = plan.replacing;
  for (let attempt = 0; attempt < MAX_SETTLE_ATTEMPTS; attempt++) {
    const token = newToken();
    const id = newId();
    // With nothing between them, accepting and marking the dispatch are one write:
    // both are durable before the handler runs, and the hot path saves a transaction.
    const claim = await core.store.claim(
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
        leaseOwner: core.owner,
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
    replacing = undefined;
    if (claim.won) {
      plan.won?.(id);
      const answer =
        claim.record.state === 'dispatched'
          ? await runDispatch(core, claim.record, token, call, dispatch, false)
          : await runClaimed(core, approvals, claim.record, call, dispatch);
      if (answer !== RETRY) return { answer, claimed: id };
      continue;
    }
    plan.seen.record = claim.record;
    if (!claim.record) continue;
    const found = match(claim.record, call, identity);
    if (found === 'attach') {
      const answer = await attach(core, claim.record, call, dispatch);
      if (answer !== RETRY) return { answer };
    } else if (found === 'replace') {
      replacing = claim.record.id;
    } else {
      return { answer: await keyConflict(core, claim.record, call) };
    }
  }
  return undefined;
}

/**
 * What a call does with the execution that holds its fingerprint: attach to it (docs/lifecycle.md, step 5
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
  // action (docs/lifecycle.md, step 5, row "failed"), not a second one.
  if (prior.state === 'failed') return 'replace';
  return 'conflict';
}

/** The key already names an execution of another request: say so, with its ref, and send nothing. */
export async function keyConflict(
  core: EngineCore,
  prior: ExecutionRecord,
  call: ToolCall,
): Promise<ToolResult> {
  const byOther = prior.actor !== call.caller.actor;
  await journal(core, [
    callEvent('attached', call, prior.id, {
      state: prior.state,
      conflict: byOther ? 'another_actor' : 'other_arguments',
    }),
  ]);
  return idemAnswer(IDEM_CODES.IDEM_KEY_CONFLICT, {
    ref: prior.id,
    state: prior.state,
    statusTool: core.statusTool,
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

/** A matching prior execution exists: the table in docs/lifecycle.md, step 5, row by row. */
export async function attach(
  core: EngineCore,
  prior: ExecutionRecord,
  call: ToolCall,
  dispatch: Dispatch,
): Promise<Attempt> {
  const attached = callEvent('attached', call, prior.id, { state: prior.state });
  switch (prior.state) {
    case 'accepted':
    case 'authorized':
      // Approved by a human (or never dispatched, its claimer gone): this same execution proceeds, once.
      return runAuthorized(core, prior, call, dispatch, [attached]);
    case 'awaiting_approval':
      return attachWaiting(core, prior, attached);
    case 'denied':
      return answerFor(core, prior, [attached]);
    case 'dispatched': {
      if (!isStale(prior)) return answerFor(core, prior, [attached]);
      const expired = await expire(core, prior, [attached]);
      return expired ? recover(core, expired, call, dispatch) : RETRY;
    }
    case 'unknown':
      await journal(core, [attached]);
      return recover(core, prior, call, dispatch);
    case 'completed':
    case 'failed':
      return answerFor(core, prior, [attached]);
  }
}
