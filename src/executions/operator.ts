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

/** What an operator may resolve an unknown outcome as. */
export const RESOLUTIONS = ['completed', 'failed'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

export function isResolution(value: unknown): value is Resolution {
  return typeof value === 'string' && (RESOLUTIONS as readonly string[]).includes(value);
}

export type OperatorResolution =
  | { resolved: true; before: ExecutionRecord; after: ExecutionRecord }
  /** Nothing changed; `reason` says why, in words for the operator. */
  | { resolved: false; reason: string };

/**
 * The rules of resolving by hand, whoever asks (`idem executions resolve`, the
 * console): a note saying what was checked is required, the execution must
 * exist, and only an unknown outcome (or a dispatch whose holder is gone) can
 * be resolved — a finished one is never rewritten.
 */
export async function resolveAsOperator(
  store: ExecutionStore,
  ref: string,
  as: Resolution,
  by: string,
  note: string,
): Promise<OperatorResolution> {
  if (note.trim() === '') return { resolved: false, reason: 'a note is required: say what you checked' };
  const before = await store.get(ref);
  if (!before) return { resolved: false, reason: `no execution ${ref}` };
  const after = await resolveExecution(store, ref, as, by, note);
  if (!after) {
    return {
      resolved: false,
      reason: `${ref} is ${before.state}: only an unknown outcome (or a dispatch whose holder is gone) can be resolved`,
    };
  }
  return { resolved: true, before, after };
}
