/**
 * Execution states (docs/lifecycle.md, step 7), a closed union. A claim writes its first state,
 * journaled as `accepted` and that state in one transaction:
 *
 * claim ─┬────────────────────────────────────► dispatched ─► completed
 *        └─► awaiting_approval ─► authorized ─┘      ├──────► failed
 *                   └─► denied                        └──────► unknown
 *
 * An `authorized` execution whose holder is gone (a human approved it, or the claimer died
 * before dispatching) is taken over and dispatched once by the next matching call.
 */
export const EXECUTION_STATES = [
  'awaiting_approval',
  'authorized',
  'dispatched',
  'completed',
  'failed',
  'unknown',
  'denied',
] as const;

export type ExecutionState = (typeof EXECUTION_STATES)[number];

/**
 * `accepted`: claimed, nothing sent yet. No row has been written in it since claims went straight
 * to their first state, and store migration 8 turned what older versions left in it into
 * `authorized` (docs/adr/0047): it is no state of a store. It stays a state the journal can
 * tell: every claim journals an `accepted` event before its first state, and in a journal (or an
 * export) written before the upgrade that event may be an execution's last.
 */
export const LEGACY_ACCEPTED = 'accepted';

/** A state as the activity journal tells it (journal/rebuild.ts): a store's, or LEGACY_ACCEPTED. */
export type JournaledState = ExecutionState | typeof LEGACY_ACCEPTED;

/** Nothing has been sent to the target yet: dispatching later is safe. */
export const NOT_YET_DISPATCHED: readonly ExecutionState[] = ['awaiting_approval', 'authorized'];

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
