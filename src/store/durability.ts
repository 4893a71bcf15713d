import { HOLDER_OUTCOMES } from '../journal/states.js';
import type { TransitionInput } from './types.js';

/**
 * Which writes must be on disk before they return, under the durable default
 * (SQLite `synchronous=FULL`, PostgreSQL `synchronous_commit` on). One rule
 * for every store.
 *
 * A write that lets something go ahead must: a claim, a move to `dispatched`
 * or `authorized`, an approval decision, an operator's or a probe's
 * resolution. Lost in a power cut after the action ran, it would let the
 * action run again, or undo what a person decided.
 *
 * A write in which the holder of a dispatch records what came back (its own
 * outcome: completed, failed or unknown), a delivery, and journal events that
 * change no state need not. Lost in a power cut, the execution reads as
 * dispatched and, once its lease lapses, unknown: an honest answer, never a
 * second run. Such a write reaches the disk with the next write that must (a
 * log is flushed in order, so one sync carries every commit before it), or
 * within OUTCOME_SYNC_WITHIN_MS when no such write comes.
 *
 * This halves the syncs of a call (one, for its claim, instead of two).
 */
export function transitionMustSync(t: TransitionInput): boolean {
  return !(t.token !== undefined && HOLDER_OUTCOMES.includes(t.to));
}

/**
 * Whether a write must be on disk before it returns ('sync'), or may reach it
 * with the next one that must ('lazy').
 */
export type WriteSync = 'sync' | 'lazy';

/**
 * The longest an outcome, delivery or journal event stays unsynced when no
 * write that must sync follows it: SQLite's timer sync (group-commit.ts). PostgreSQL's
 * WAL writer has the same default period (wal_writer_delay), and at worst
 * three times it (see postgres/sql.ts).
 */
export const OUTCOME_SYNC_WITHIN_MS = 200;

/**
 * The longest a write nobody waits for (TransitionInput.deferrable: an outcome whose answer has
 * left) may be held before it is committed, so that it shares the next write's transaction — at
 * one call in flight, the next call's claim: its pages (the row's leaf, the journal's) are then
 * written once for both. A read of the store commits what is held first.
 */
export const OUTCOME_WRITE_WITHIN_MS = 5;
