import type { ClientCapabilities, RequestId } from '@modelcontextprotocol/sdk/types.js';
import {
  approvalElicitation,
  decisionOfElicitation,
  elicitationAllowed,
} from '../../approval/elicitation-form.js';
import type { ResolvedContract } from '../../contracts/contract.js';
import type { Approver, ApproverAnswer } from '../../executions/call.js';
import type { CallSession } from '../tool-calls/call-context.js';

/**
 * The approver of one tools/call as the engine takes it: an `elicitation/create` request to the
 * client's human, sent by the gateway itself on the caller's session, tied to that call. None —
 * the operator queue decides — when the contract says `elicitation: never`, the client did not
 * declare the capability, or the front has no sessions (a stateless front cannot carry the
 * client's answer back).
 */
export function approverFor(
  session: CallSession,
  actor: string,
  forwarded: { frontId: RequestId; cancelled?: AbortController },
  contract: ResolvedContract,
): { approver?: Approver } {
  if (!elicitationAllowed(contract) || !session.canAsk) return {};
  if (!supportsFormElicitation(session.clientCapabilities)) return {};
  const cancelled = forwarded.cancelled?.signal;
  const approver = async (view: Parameters<Approver>[0]): Promise<ApproverAnswer> => {
    const reply = await session.ask(
      'elicitation/create',
      approvalElicitation(view),
      forwarded.frontId,
      cancelled,
      // Until the request expires (a timer cannot count past 2^31 - 1 ms).
      Math.min(Math.max(0, view.expiresAt - view.requestedAt), 2 ** 31 - 1),
    );
    // No answer in time, the call cancelled, an error, or the human dismissed it: the operator queue decides.
    if (!reply || 'error' in reply) return 'pending';
    return decisionOfElicitation(reply.result, actor) ?? 'pending';
  };
  return { approver };
}

/** `elicitation: {}` (2025-06-18) and `elicitation: { form: {} }` (2025-11-25) both mean forms. */
function supportsFormElicitation(capabilities: ClientCapabilities | undefined): boolean {
  const elicitation = capabilities?.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (!elicitation) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}
