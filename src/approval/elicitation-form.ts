import type { ResolvedContract } from '../contracts/contract.js';
import { type ApprovalView, approvalMessage } from './view.js';

/**
 * Approval by the client's human, as an MCP elicitation form: asked by the gateway's elicitation
 * approver while a call waits (gateway/sessions/elicitation.ts), or as a task's input request answered
 * with `tasks/update` (executions/task-approval.ts). One form, one reading of its answer.
 */

/** The form the client's human fills in: nothing but an optional reason; accepting is the approval. */
export const APPROVAL_FORM = {
  type: 'object',
  properties: {
    reason: {
      type: 'string',
      title: 'Reason (optional)',
      description: 'Why you approve or decline; kept in the audit journal.',
      maxLength: 500,
    },
  },
} as const;

/**
 * Whether the contract lets the client's human decide (`elicitation: allow`). Where the question
 * can be carried is the caller's to add: a session that declared the capability (the approver), or
 * a 2026-07-28 task (its input request, answered through the store by any gateway).
 */
export function elicitationAllowed(contract: Pick<ResolvedContract, 'elicitation'> | undefined): boolean {
  return contract !== undefined && contract.elicitation !== 'never';
}

/** The `elicitation/create` params that ask for this approval. */
export function approvalElicitation(view: ApprovalView): Record<string, unknown> {
  return { mode: 'form', message: approvalMessage(view), requestedSchema: APPROVAL_FORM };
}

/** A human's elicitation answer as a decision by `by`; undefined (still pending) for `cancel` or anything else. */
export function decisionOfElicitation(
  answer: unknown,
  by: string,
): { decision: 'approved' | 'denied'; by: string; via: 'elicitation'; reason?: string } | undefined {
  if (!answer || typeof answer !== 'object') return undefined;
  const { action, content } = answer as { action?: unknown; content?: Record<string, unknown> };
  const given = content?.reason;
  const reason = typeof given === 'string' && given.trim() !== '' ? given.slice(0, 500) : undefined;
  if (action === 'accept')
    return { decision: 'approved', by, via: 'elicitation', ...(reason ? { reason } : {}) };
  if (action === 'decline')
    return { decision: 'denied', by, via: 'elicitation', reason: reason ?? 'declined by the user' };
  return undefined;
}
