import { EXPIRE, sweepEvents } from '../sweep.js';
import type { SweepResult } from '../types.js';
import type { ApprovalStatements } from './approval-sql.js';
import { appendJournal } from './journal-append.js';
import { type Statements, toRecord, trimBoundary } from './sql.js';

/**
 * The sweep (ExecutionStore.sweep; what it does is store/sweep.ts) as SQLite's statements: the
 * body of one IMMEDIATE transaction; a dry run changes nothing.
 */
export function writeSweep(
  sql: Statements,
  approvalSql: ApprovalStatements,
  now: number,
  retentionMs: number,
  dryRun: boolean,
): SweepResult {
  const cutoff = now - retentionMs;
  const range = trimBoundary(sql, cutoff);
  if (dryRun) {
    const stale = sql.wouldExpire.all({ now }).map((row) => ({ ...toRecord(row, now), state: EXPIRE.to }));
    return { expired: stale, trimmed: sql.wouldTrim.get(range)?.n ?? 0 };
  }
  const expired = sql.expire.all({ now });
  const trimmed = sql.trim.all(range).map((row) => row.id);
  approvalSql.trimSessions.run({ cutoff });
  const swept = sweepEvents(expired, trimmed, retentionMs);
  appendJournal(sql, swept.events, now);
  return { expired: swept.expired.map((row) => toRecord(row, now)), trimmed: trimmed.length };
}
