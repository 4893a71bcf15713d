import type { ClientCapabilities, RequestId } from '@modelcontextprotocol/sdk/types.js';
import {
  approvalElicitation,
  decisionOfElicitation,
  elicitationAllowed,
} from '../../approval/elicitation-form.js';
import type { ResolvedContract } from '../../contracts/contract.js';
import type { UpstreamReply } from '../../dispatch/mcp/index.js';
import type { Approver, ApproverAnswer } from '../../executions/call.js';
import type { SessionState } from './session-state.js';

/**
 * The approver of one tools/call: an `elicitation/create` request to the
 * client's human, sent by the gateway itself on the caller's session, tied to
 * that call. Undefined — the operator queue decides — when the contract says
 * `elicitation: never`, the client did not declare the capability, or the
 * front has no sessions (a stateless front cannot carry the client's answer back).
 */
export function elicitationApprover(
  s: SessionState,
  callId: RequestId,
  contract: ResolvedContract,
  cancelled: AbortSignal | undefined,
): Approver | undefined {
  if (!elicitationAllowed(contract) || s.ctx.shared !== undefined) return undefined;
  if (!supportsFormElicitation(s.clientCapabilities)) return undefined;
  return async (view): Promise<ApproverAnswer> => {
    const reply = await askClient(
      s,
      'elicitation/create',
      approvalElicitation(view),
      callId,
      cancelled,
      // Until the request expires (a timer cannot count past 2^31 - 1 ms).
      Math.min(Math.max(0, view.expiresAt - view.requestedAt), 2 ** 31 - 1),
    );
    // No answer in time, the call cancelled, an error, or the human dismissed it: the operator queue decides.
    if (!reply || 'error' in reply) return 'pending';
    return decisionOfElicitation(reply.result, s.actor()) ?? 'pending';
  };
}

/** The approver of a call as the engine takes it: the client's human where it can, else none (the operator queue). */
export function approverFor(
  s: SessionState,
  forwarded: { frontId: RequestId; cancelled?: AbortController },
  contract: ResolvedContract,
): { approver?: Approver } {
  const approver = elicitationApprover(s, forwarded.frontId, contract, forwarded.cancelled?.signal);
  return approver ? { approver } : {};
}

/** `elicitation: {}` (2025-06-18) and `elicitation: { form: {} }` (2025-11-25) both mean forms. */
function supportsFormElicitation(capabilities: ClientCapabilities | undefined): boolean {
  const elicitation = capabilities?.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (!elicitation) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

/**
 * Sends a request of the gateway's own to the client and waits for its reply,
 * at most `timeoutMs`; undefined if none came (the session closed, the call it
 * belongs to was cancelled, or time ran out). The id space is the one requests
 * from upstreams use, so replies route the same way.
 */
export async function askClient(
  s: SessionState,
  method: string,
  params: Record<string, unknown>,
  relatedTo: RequestId,
  cancelled: AbortSignal | undefined,
  timeoutMs: number,
): Promise<UpstreamReply | undefined> {
  if (s.closed || cancelled?.aborted) return undefined;
  const id = `idem-${s.nextFrontId++}`;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const reply = new Promise<UpstreamReply | undefined>((resolve) => {
    s.toClient.set(id, resolve);
    timer = setTimeout(() => resolve(undefined), timeoutMs);
    timer.unref();
    onAbort = () => resolve(undefined);
    cancelled?.addEventListener('abort', onAbort, { once: true });
  });
  await s.send({ jsonrpc: '2.0', id, method, params }, relatedTo);
  try {
    return await reply;
  } finally {
    clearTimeout(timer);
    if (onAbort) cancelled?.removeEventListener('abort', onAbort);
    s.toClient.delete(id);
  }
}
