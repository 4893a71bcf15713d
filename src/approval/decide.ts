import type { ActivityEventInput } from '../journal/events.js';
import type {
  ApprovalChannel,
  DecideApprovalResult,
  ExecutionRecord,
  ExecutionStore,
} from '../store/types.js';

/** Who decides, through what, and (for a denial) why. */
export interface Decider {
  /** The operator (`operator:alice`), or the actor whose human answered an elicitation. */
  by: string;
  via: ApprovalChannel;
  reason?: string;
}

/**
 * The one way a decision is made, whoever makes it (CLI, elicitation,
 * console, library): the store applies it atomically and journals who
 * decided, how and — by the entry's time — when. The loser of a race is told
 * how things stand (`decided: false`).
 */
export function decideApproval(
  store: ExecutionStore,
  ref: string,
  decision: 'approved' | 'denied',
  decider: Decider,
): Promise<DecideApprovalResult> {
  const detail = {
    by: decider.by,
    via: decider.via,
    ...(decider.reason !== undefined ? { reason: decider.reason } : {}),
  };
  return store.decideApproval({
    id: ref,
    decision,
    by: decider.by,
    via: decider.via,
    ...(decider.reason !== undefined ? { reason: decider.reason } : {}),
    events: [{ kind: decision === 'approved' ? 'authorized' : 'denied', executionId: ref, detail }],
  });
}

/**
 * Ends an approval request nobody decided in time: denied, as `expired`. A
 * no-op (decided: false) before its expiry or once decided. Whoever looks at
 * a waiting execution calls this first, so expiry needs no timer to be seen.
 */
export function expireIfDue(store: ExecutionStore, record: ExecutionRecord): Promise<DecideApprovalResult> {
  const events: ActivityEventInput[] = [
    {
      kind: 'denied',
      executionId: record.id,
      actor: record.actor,
      tool: record.tool,
      detail: { by: 'idem', via: 'expiry', reason: 'expired' },
    },
  ];
  return store.decideApproval({ id: record.id, decision: 'expired', by: 'idem', via: 'expiry', events });
}

/** Expires every pending request past its time (the gateway's sweeper); returns how many ended. */
export async function expirePending(store: ExecutionStore): Promise<number> {
  const now = await store.now();
  let ended = 0;
  for (const request of await store.listApprovals({ pending: true, limit: 1000 })) {
    if (request.expiresAt > now) continue;
    const record = await store.get(request.executionId);
    if (record && (await expireIfDue(store, record)).decided) ended++;
  }
  return ended;
}
