import type { ActivityEntry } from './events.js';
import type { ExecutionState } from './states.js';

/**
 * Every execution's state from the activity journal alone, folding its
 * events in seq order. Each state change the engine or a store makes is
 * journaled in the same transaction, so this must equal the store's states —
 * a test holds it to that.
 */
export function rebuildStates(entries: Iterable<ActivityEntry>): Map<string, ExecutionState> {
  const states = new Map<string, ExecutionState>();
  for (const entry of entries) {
    if (!entry.executionId) continue;
    const next = stateAfter(entry, states.get(entry.executionId));
    if (next) states.set(entry.executionId, next);
  }
  return states;
}

export function stateAfter(
  entry: Pick<ActivityEntry, 'kind' | 'detail'>,
  current: ExecutionState | undefined,
): ExecutionState | undefined {
  switch (entry.kind) {
    case 'accepted':
      return 'accepted';
    case 'awaiting_approval':
      return 'awaiting_approval';
    case 'authorized':
      return 'authorized';
    case 'dispatched':
    case 'upstream_task_resumed':
      return 'dispatched';
    case 'denied':
      return 'denied';
    case 'lease_expired':
      return 'unknown';
    case 'outcome':
      return entry.detail.state as ExecutionState;
    case 'operator_resolution':
      return entry.detail.as as ExecutionState;
    default:
      // received, attached, delivered, receipt_hit, id_reused, task_created, task_cancel,
      // task_input, upstream_task: no change of state.
      return current;
  }
}
