import { holderGone } from '../store/lease.js';
import type { ExecutionRecord } from '../store/types.js';

/**
 * The holder of an execution is gone (see store/lease.ts), by the store's
 * clock as of when the record was read. Such an execution may be taken over
 * (never dispatched yet) or is `unknown` (dispatched).
 */
export function isStale(record: ExecutionRecord): boolean {
  return holderGone(record, record.readAt);
}
