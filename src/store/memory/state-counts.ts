import type { ExecutionState } from '../../journal/states.js';
import type { StateCount } from '../types.js';

/** The memory store's countStates: one pass over its rows (the SQL stores read their (state, updated_at) index). */
export function countRowStates(
  rows: Iterable<{ state: ExecutionState; updatedAt: number }>,
  states: readonly ExecutionState[],
): StateCount[] {
  const counts = new Map<ExecutionState, StateCount>(
    states.map((state) => [state, { state, count: 0, oldestUpdatedAt: null }]),
  );
  for (const row of rows) {
    const count = counts.get(row.state);
    if (!count) continue;
    count.count++;
    count.oldestUpdatedAt = Math.min(count.oldestUpdatedAt ?? row.updatedAt, row.updatedAt);
  }
  return states.map((state) => ({ ...counts.get(state)! }));
}
