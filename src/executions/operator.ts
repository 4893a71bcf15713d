import type { ExecutionRecord, ExecutionStore } from '../store/types.js';
import { isStale } from './leases.js';

/**
 * What an operator decides about one execution's outcome. A plain function of
 * the store, so the CLI can run it without an engine; journaled with who made
 * it. (Approvals are decided in approval/decide.ts.)
 */

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
