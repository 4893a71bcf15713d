import { trimmedEvents } from '../../journal/trims.js';
import { leaseExpiredEvent } from '../lease.js';
import type { SweepResult } from '../types.js';
import type { ApprovalStatements } from './approval-sql.js';
import { appendJournal } from './journal-append.js';
import { type Statements, toRecord } from './sql.js';

/**
 * The sweep (ExecutionStore.sweep): dispatched executions whose holder is gone become
 * `unknown`, journaled as `lease_expired`; finished ones and approved sessions older than
 * the retention are trimmed. The body of one IMMEDIATE transaction; a dry run changes nothing.
 */
export function writeSweep(
  sql: Statements,
  approvalSql: ApprovalStatements,
  now: number,
  retentionMs: number,
  dryRun: boolean,
): SweepResult {
  const cutoff = now - retentionMs;
  if (dryRun) {
    const stale = sql.wouldExpire
      .all({ now })
      .map((row) => ({ ...toRecord(row, now), state: 'unknown' as const }));
    return { expired: stale, trimmed: sql.wouldTrim.get({ cutoff })?.n ?? 0 };
  }
  // RETURNING gives no order; by id is creation order, as the journal should read.
  const rows = sql.expire.all({ now }).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  appendJournal(sql, rows.map(leaseExpiredEvent), now);
  // What the trim removes is journaled in the same transaction (journal/trims.ts).
  const trimmed = sql.trim.all({ cutoff }).map((row) => row.id);
  appendJournal(sql, trimmedEvents(trimmed, retentionMs), now);
  approvalSql.trimSessions.run({ cutoff });
  return { expired: rows.map((row) => toRecord(row, now)), trimmed: trimmed.length };
}
