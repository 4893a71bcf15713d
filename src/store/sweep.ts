import type { ActivityEventInput } from '../journal/events.js';
import { type ExecutionState, FINISHED } from '../journal/states.js';
import { trimmedEvents } from '../journal/trims.js';
import { type HolderTimes, holderGone, holderGoneSql, leaseExpiredEvent } from './lease.js';
import { sqlState, sqlStates } from './sql-columns.js';

/**
 * The sweep (ExecutionStore.sweep) as every backend runs it; each backend's `sweep.ts` keeps
 * only its storage's statements and transaction.
 *
 * - **Expire**: a `dispatched` execution whose holder is gone (lease.ts, holderGone) becomes
 *   `unknown`, journaled as `lease_expired` — never "not started".
 * - **Trim**: a finished execution (FINISHED) whose last change is at or before now − retention
 *   is deleted, with what belongs to it (its approval request, its tasks), and the trim is
 *   journaled (journal/trims.ts). Nothing else is ever trimmed: what is unfinished waits for its
 *   caller, a recovery or an operator. Approved sessions older than the retention go too.
 *
 * The two never touch the same row (dispatched vs finished), so their order inside the one
 * transaction changes nothing but the journal's, which is fixed here (sweepEvents). A dry run
 * reports the same rows and changes nothing.
 */
export const EXPIRE = { from: 'dispatched', to: 'unknown' } as const satisfies Record<string, ExecutionState>;

/** What a trim may delete. */
export const TRIMMABLE: readonly ExecutionState[] = FINISHED;

/** The expiry's condition, on a row in memory (the memory store). */
export function expires(row: HolderTimes & { state: ExecutionState }, now: number): boolean {
  return row.state === EXPIRE.from && holderGone(row, now);
}

/** The trim's condition, on a row in memory: `cutoff` is now − retention. */
export function trimmable(row: { state: ExecutionState; updatedAt: number }, cutoff: number): boolean {
  return TRIMMABLE.includes(row.state) && row.updatedAt <= cutoff;
}

/** expires() as an SQL condition on the `executions` columns, `now` the store clock's SQL (lease.ts). */
export function expiresSql(now: string): string {
  return `state = ${sqlState(EXPIRE.from)} AND ${holderGoneSql(now)}`;
}

/** The state an expired row is set to, as SQL. */
export const EXPIRED_STATE_SQL = sqlState(EXPIRE.to);

/** trimmable() as an SQL condition, `cutoff` the SQL of now − retention. */
export function trimmableSql(cutoff: string): string {
  return `state IN (${sqlStates(TRIMMABLE)}) AND updated_at <= ${cutoff}`;
}

/**
 * What one sweep journals, in the same transaction as its changes: each expiry (in id order,
 * which is creation order — a statement's RETURNING gives none), then the trims.
 */
export function sweepEvents<Row extends { id: string; actor: string; tool: string }>(
  expired: Row[],
  trimmedIds: readonly string[],
  retentionMs: number,
): { expired: Row[]; events: ActivityEventInput[] } {
  const ordered = [...expired].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    expired: ordered,
    events: [...ordered.map(leaseExpiredEvent), ...trimmedEvents(trimmedIds, retentionMs)],
  };
}
