import type { ActivityEventInput } from '../journal/events.js';

/**
 * The one home of "the holder of an execution is gone": its lease has expired
 * (or there is none), or its dispatch deadline has passed. Such an execution
 * may be taken over (never dispatched yet) or is `unknown` (dispatched).
 *
 * Every store asks the same question with the same boundary — a lease that
 * ends at `now` has ended (`<=`) — but each by its own clock:
 * - the memory and SQLite stores, and SQLite's `@now`, by the store's clock
 *   (injected; by default the process clock, shared by all processes on one host);
 * - PostgreSQL by the database's clock (`c.now`), so gateways whose clocks
 *   disagree still agree on when a lease ends;
 * - the engine (executions/leases.ts) by the `readAt` of the record it holds,
 *   which is that same store clock as of when the record was read.
 */

/** The two times a holder's staleness depends on (ms since the epoch; null: none). */
export interface HolderTimes {
  leaseExpiresAt: number | null;
  deadlineAt: number | null;
}

export function holderGone(times: HolderTimes, now: number): boolean {
  const leaseDead = times.leaseExpiresAt === null || times.leaseExpiresAt <= now;
  const pastDeadline = times.deadlineAt !== null && times.deadlineAt <= now;
  return leaseDead || pastDeadline;
}

/**
 * `holderGone` as a SQL condition on the `executions` columns, `now` being the
 * SQL expression for the store's clock (`@now` in SQLite, `c.now` in
 * PostgreSQL). A NULL `deadline_at` makes its comparison NULL, which OR treats
 * as false: the same as "no deadline" above.
 */
export function holderGoneSql(now: string): string {
  return `(lease_expires_at IS NULL OR lease_expires_at <= ${now} OR deadline_at <= ${now})`;
}

/**
 * What a transition does to the holder (token, owner, lease), as the integer
 * both SQL stores pass to their `CASE`: keep it, set a new one, or clear it.
 */
export const HOLDER_KEEP = 0;
export const HOLDER_SET = 1;
export const HOLDER_CLEAR = 2;
export type HolderChange = typeof HOLDER_KEEP | typeof HOLDER_SET | typeof HOLDER_CLEAR;

/** A transition's `holder` (omitted: keep; null: clear; a value: set) as a HolderChange. */
export function holderChange(holder: object | null | undefined): HolderChange {
  if (holder === undefined) return HOLDER_KEEP;
  return holder === null ? HOLDER_CLEAR : HOLDER_SET;
}

/**
 * The journal event of a dispatched execution whose holder is gone, made `unknown`: the same from
 * every store's sweep and from the engine (an attached call that finds the lease lapsed).
 */
export function leaseExpiredEvent(row: { id: string; actor: string; tool: string }): ActivityEventInput {
  return {
    kind: 'lease_expired',
    executionId: row.id,
    actor: row.actor,
    tool: row.tool,
    detail: { state: 'unknown' },
  };
}
