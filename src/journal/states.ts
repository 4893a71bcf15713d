/**
 * Execution states (docs/lifecycle.md, step 7), a closed union.
 *
 * accepted ─► awaiting_approval ─► authorized ─► dispatched ─► completed
 *     │               │                 │             ├──────► failed
 *     │               └─► denied        │             └──────► unknown
 *     └─► (crash before dispatch: still accepted; safe to dispatch later)
 */
export const EXECUTION_STATES = [
  'accepted',
  'awaiting_approval',
  'authorized',
  'dispatched',
  'completed',
  'failed',
  'unknown',
  'denied',
] as const;

export type ExecutionState = (typeof EXECUTION_STATES)[number];

/** Nothing has been sent to the target yet: dispatching later is safe. */
export const NOT_YET_DISPATCHED: readonly ExecutionState[] = ['accepted', 'awaiting_approval', 'authorized'];

/**
 * The target answered (or the operator decided): the record is final. The only states a
 * retention trim deletes (store/sweep.ts); every other waits for its caller, a recovery or an
 * operator.
 */
export const FINISHED: readonly ExecutionState[] = ['completed', 'failed', 'denied'];

/** `state` (a stored value, as verify reads it) is one of FINISHED. */
export function isFinished(state: string): boolean {
  return (FINISHED as readonly string[]).includes(state);
}

/** What the holder of a dispatch records as what came back: its own outcome (store/durability.ts). */
export const HOLDER_OUTCOMES: readonly ExecutionState[] = ['completed', 'failed', 'unknown'];

export function isExecutionState(value: unknown): value is ExecutionState {
  return typeof value === 'string' && (EXECUTION_STATES as readonly string[]).includes(value);
}
