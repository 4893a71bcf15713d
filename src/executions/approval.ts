import type { ExecutionRecord } from '../store/types.js';
import type { Approver, Dispatch, ToolCall } from './call.js';
import { type Attempt, callEvent, type EngineCore, RETRY } from './core.js';
import { answerFor } from './describe.js';
import { runDispatch } from './dispatch.js';

/**
 * Who may run what without asking again (DESIGN §7): the approver for
 * contracts that require approval, and the sessions a human approved, for
 * `approval: session`.
 */
export class Approvals {
  readonly #approver: Approver | undefined;
  /** Sessions a human approved, for `approval: session`: actor ‖ session ‖ tool. */
  readonly #approvedSessions = new Set<string>();

  constructor(approver: Approver | undefined) {
    this.#approver = approver;
  }

  needsApproval(call: ToolCall): boolean {
    const policy = call.contract.approval;
    if (policy === 'every_call') return true;
    if (policy === 'session') {
      const session = call.caller.session ?? '';
      return !this.#approvedSessions.has(sessionKey(call.caller.actor, session, call.tool));
    }
    return false;
  }

  /** The approver's decision on `record`; `pending` when there is no approver (a human decides later). */
  decide(record: ExecutionRecord): Promise<'approved' | 'denied' | 'pending'> {
    return this.#approver
      ? this.#approver({
          executionId: record.id,
          tool: record.tool,
          actor: record.actor,
          session: record.session,
          argumentsPreview: record.argumentsPreview,
        })
      : Promise.resolve('pending');
  }

  /** This actor's session was approved for this tool: its next calls do not ask again. */
  approveSession(actor: string, session: string, tool: string): void {
    this.#approvedSessions.add(sessionKey(actor, session, tool));
  }
}

/** We won a claim that waits for approval: ask, then dispatch if approved. */
export async function runClaimed(
  core: EngineCore,
  approvals: Approvals,
  record: ExecutionRecord,
  token: string,
  call: ToolCall,
  dispatch: Dispatch,
): Promise<Attempt> {
  const decision = await approvals.decide(record);
  if (decision === 'pending') return answerFor(core, record);
  if (decision === 'denied') {
    const denied = await core.store.transition({
      id: record.id,
      from: ['awaiting_approval'],
      to: 'denied',
      token,
      holder: null,
      note: 'denied by the approver',
      events: [callEvent('denied', call, record.id)],
    });
    return answerFor(core, denied ?? record);
  }
  if (call.contract.approval === 'session' && call.caller.session !== null) {
    approvals.approveSession(call.caller.actor, call.caller.session, call.tool);
  }
  // The approval is recorded on its own first: if the dispatch mark then cannot be
  // written, the execution stays `authorized` and a later retry dispatches it.
  const authorized = await core.store.transition({
    id: record.id,
    from: ['awaiting_approval'],
    to: 'authorized',
    token,
    events: [callEvent('authorized', call, record.id)],
  });
  if (!authorized) return RETRY;
  const dispatched = await core.store.transition({
    id: record.id,
    from: ['authorized'],
    to: 'dispatched',
    token,
    holder: { token, owner: core.owner, leaseMs: call.contract.leaseMs },
    dispatchTimeoutMs: call.contract.timeoutMs,
    events: [callEvent('dispatched', call, record.id)],
  });
  if (!dispatched) return RETRY;
  return runDispatch(core, dispatched, token, call, dispatch, false);
}

function sessionKey(actor: string, session: string, tool: string): string {
  return JSON.stringify([actor, session, tool]);
}
