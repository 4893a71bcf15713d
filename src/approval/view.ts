import type { ApprovalRequest, ExecutionRecord, ExecutionStore } from '../store/types.js';

/**
 * What an approver sees of one pending action (the CLI, the console, an
 * elicitation message): enough to decide, never a secret — the credential by
 * name, the arguments as their bounded, redacted preview.
 */
export interface ApprovalView {
  ref: string;
  state: ExecutionRecord['state'];
  tool: string;
  actor: string;
  session: string | null;
  channel: string;
  target: string;
  credential: string | null;
  arguments: string;
  fingerprint: string;
  /**
   * The keyed digest of the whole request this approval lets run, its arguments
   * included: the request digest under a business key (whose fingerprint names
   * the key alone), else the fingerprint. A decision names it, so that it
   * approves exactly the arguments the approver was shown.
   */
  argumentsDigest: string;
  /** An earlier execution of the same intent (replaced by this one), if any: approval is not evidence it did or did not run. */
  earlier: string | null;
  policy: ApprovalRequest['policy'];
  requestedAt: number;
  expiresAt: number;
  decision: ApprovalRequest['decision'];
  decidedBy: string | null;
  decidedVia: ApprovalRequest['decidedVia'];
  decidedAt: number | null;
  reason: string | null;
}

export function approvalView(record: ExecutionRecord, request: ApprovalRequest): ApprovalView {
  return {
    ref: record.id,
    state: record.state,
    tool: record.tool,
    actor: record.actor,
    session: record.session,
    channel: request.channel,
    target: request.target,
    credential: request.credentialRef,
    arguments: record.argumentsPreview,
    fingerprint: record.fingerprint,
    argumentsDigest: record.requestDigest ?? record.fingerprint,
    earlier: request.earlier,
    policy: request.policy,
    requestedAt: request.requestedAt,
    expiresAt: request.expiresAt,
    decision: request.decision,
    decidedBy: request.decidedBy,
    decidedVia: request.decidedVia,
    decidedAt: request.decidedAt,
    reason: request.reason,
  };
}

/** The view of `ref`, or undefined when it has no approval request (or was trimmed). */
export async function loadApprovalView(
  store: ExecutionStore,
  ref: string,
): Promise<ApprovalView | undefined> {
  const [record, request] = await Promise.all([store.get(ref), store.getApproval(ref)]);
  return record && request ? approvalView(record, request) : undefined;
}

/** One line an elicitation shows the client's human. */
export function approvalMessage(view: ApprovalView): string {
  const where = view.credential
    ? `${view.channel}:${view.target} with credential "${view.credential}"`
    : `${view.channel}:${view.target}`;
  const earlier = view.earlier
    ? ` An earlier execution of the same action exists (${view.earlier}); approving does not tell whether it ran.`
    : '';
  return (
    `Approve running ${view.tool} (${where}) for ${view.actor}? Arguments: ${view.arguments}. ` +
    `Ref ${view.ref}, fingerprint ${view.fingerprint}.${earlier} Approval runs it once.`
  );
}
