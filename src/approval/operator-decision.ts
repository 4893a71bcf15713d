import type { ExecutionStore } from '../store/types.js';
import type { Decider } from './decide.js';
import { decideApproval, expireIfDue } from './decide.js';
import { type ApprovalView, approvalView, loadApprovalView } from './view.js';

export interface OperatorDecision {
  decided: boolean;
  /** How the request stands now (undefined: there is no such request). */
  view: ApprovalView | undefined;
  /** When not decided: why, in words for the operator. */
  reason?: string;
}

/**
 * An operator's approve or deny, from the CLI or the console — one rule for
 * both: the decision is applied atomically (the first of any racing
 * decisions wins); a request refused while still undecided has run out of
 * time, so it is ended as `expired` and said so; the loser is told what stands.
 */
export async function decideAsOperator(
  store: ExecutionStore,
  ref: string,
  decision: 'approved' | 'denied',
  decider: Decider,
): Promise<OperatorDecision> {
  const result = await decideApproval(store, ref, decision, decider);
  if (result.decided) return { decided: true, view: approvalView(result.record, result.approval) };
  if (result.record?.state === 'awaiting_approval') await expireIfDue(store, result.record);
  const view = await loadApprovalView(store, ref);
  return { decided: false, view, reason: notDecided(ref, view) };
}

function notDecided(ref: string, view: ApprovalView | undefined): string {
  if (!view) return `no approval request for ${ref}`;
  if (view.decision !== null) {
    const at = view.decidedAt === null ? '-' : new Date(view.decidedAt).toISOString();
    return `${ref} was already decided: ${view.decision} by ${view.decidedBy} via ${view.decidedVia} at ${at}${view.reason ? ` (${view.reason})` : ''}`;
  }
  return `${ref} is ${view.state}, not awaiting approval`;
}
