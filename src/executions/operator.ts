import type { ExecutionRecord, ExecutionStore } from '../store/types.js';
import { isStale } from './leases.js';

/**
 * What an operator (or an approval) decides about one execution. Plain
 * functions of the store, so the CLI can run them without an engine; every
 * decision is journaled with who made it.
 */

/** A human approved an execution waiting for approval; the next matching call dispatches it. */
export function approveExecution(
  store: ExecutionStore,
  ref: string,
  by: string,
): Promise<ExecutionRecord | undefined> {
  return store.transition({
    id: ref,
    from: ['awaiting_approval'],
    to: 'authorized',
    holder: null,
    events: [{ kind: 'authorized', executionId: ref, detail: { by } }],
  });
}

export function denyExecution(
  store: ExecutionStore,
  ref: string,
  by: string,
  reason: string,
): Promise<ExecutionRecord | undefined> {
  return store.transition({
    id: ref,
    // Not `accepted`: that is already past approval and may be dispatching.
    from: ['awaiting_approval', 'authorized'],
    to: 'denied',
    holder: null,
    note: reason,
    events: [{ kind: 'denied', executionId: ref, detail: { by, reason } }],
  });
}

/** The operator's answer to an unknown outcome (or a dispatch whose holder is gone): it did, or did not, happen. */
export async function resolveExecution(
  store: ExecutionStore,
  ref: string,
  as: 'completed' | 'failed',
  by: string,
  note: string,
): Promise<ExecutionRecord | undefined> {
  const current = await store.get(ref);
  if (!current) return undefined;
  const from = current.state === 'dispatched' && isStale(current) ? 'dispatched' : 'unknown';
  return store.transition({
    id: ref,
    from: [from],
    to: as,
    ...(from === 'dispatched' ? { requireStale: true } : {}),
    holder: null,
    note,
    outcome: {
      result: {
        isError: as === 'failed',
        content: [{ type: 'text', text: `Resolved by ${by} as ${as}: ${note}` }],
      },
    },
    events: [{ kind: 'operator_resolution', executionId: ref, detail: { by, as, note } }],
  });
}
