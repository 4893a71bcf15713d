import type { ExecutionRecord } from '../store/types.js';

/**
 * The holder of an execution is gone: its lease has expired (or there is
 * none), or the dispatch deadline has passed — both by the store's clock, as
 * of when the record was read. Such an execution may be taken over (never
 * dispatched yet) or is `unknown` (dispatched).
 */
export function isStale(record: ExecutionRecord): boolean {
  const leaseDead = record.leaseExpiresAt === null || record.leaseExpiresAt <= record.readAt;
  const pastDeadline = record.deadlineAt !== null && record.deadlineAt <= record.readAt;
  return leaseDead || pastDeadline;
}
