import type { ExecutionStore } from '../store/types.js';
import type { Decider } from './decide.js';
import { decideApproval, expireIfDue } from './decide.js';
import { type ApprovalView, approvalView, loadApprovalView } from './view.js';

/** Why an operator's decision was not applied — stable, for a program to switch on. */
export type DecisionRefusal = 'no_request' | 'already_decided' | 'not_pending' | 'digest_mismatch';

export interface OperatorDecision {
  decided: boolean;
  /** How the request stands now (undefined: there is no such request). */
  view: ApprovalView | undefined;
  /** When not decided: why. */
  refusal?: DecisionRefusal;
  /** When not decided: why, in words for the operator. */
  reason?: string;
}

/**
 * An operator's approve or deny, from the CLI or the console — one rule for
 * both: the decision is applied atomically (the first of any racing
 * decisions wins); a request refused while still undecided has run out of
 * time, so it is ended as `expired` and said so; the loser is told what stands.
 *
 * `argumentsDigest`, when given, is the digest of the request the operator
 * was shown (ApprovalView.argumentsDigest): a decision is applied only to
 * that request, never to whatever `ref` names by the time it arrives.
 */
export async function decideAsOperator(
  store: ExecutionStore,
  ref: string,
  decision: 'approved' | 'denied',
  decider: Decider,
  argumentsDigest?: string,
): Promise<OperatorDecision> {
  if (argumentsDigest !== undefined) {
    // Checked before the atomic decision, not in it: an execution's digest is fixed when it is claimed.
    const view = await loadApprovalView(store, ref);
    if (!view)
      return { decided: false, view, refusal: 'no_request', reason: `no approval request for ${ref}` };
    if (view.argumentsDigest !== argumentsDigest)
      return {
        decided: false,
        view,
        refusal: 'digest_mismatch',
        reason:
          `nothing was decided: ${ref} has arguments digest ${view.argumentsDigest}, not ${argumentsDigest} ` +
          'as the decision said; look at the request again and decide on what it asks now',
      };
  }
  const result = await decideApproval(store, ref, decision, decider);
  if (result.decided) return { decided: true, view: approvalView(result.record, result.approval) };
  if (result.record?.state === 'awaiting_approval') await expireIfDue(store, result.record);
  const view = await loadApprovalView(store, ref);
  return { decided: false, view, ...notDecided(ref, view) };
}

function notDecided(
  ref: string,
  view: ApprovalView | undefined,
): { refusal: DecisionRefusal; reason: string } {
  if (!view) return { refusal: 'no_request', reason: `no approval request for ${ref}` };
  if (view.decision !== null) {
    const at = view.decidedAt === null ? '-' : new Date(view.decidedAt).toISOString();
    return {
      refusal: 'already_decided',
      reason: `${ref} was already decided: ${view.decision} by ${view.decidedBy} via ${view.decidedVia} at ${at}${view.reason ? ` (${view.reason})` : ''}`,
    };
  }
  return { refusal: 'not_pending', reason: `${ref} is ${view.state}, not awaiting approval` };
}
