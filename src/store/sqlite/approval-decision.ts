import { approvalFromColumns } from '../sql-columns.js';
import type { DecideApprovalInput, DecideApprovalResult } from '../types.js';
import type { ApprovalStatements } from './approval-sql.js';
import { appendJournal } from './journal-append.js';
import { type Statements, toRecord } from './sql.js';

/**
 * The decision on an approval request: the body of one IMMEDIATE transaction that
 * sqlite-store.ts runs through group commit. Nothing changes unless the one conditional
 * update decides (approval-sql.ts); then the request, the approved session and the journal
 * entries commit with it.
 */
export function writeDecision(
  sql: Statements,
  approvalSql: ApprovalStatements,
  now: number,
  input: DecideApprovalInput,
): DecideApprovalResult {
  const params = { id: input.id, decision: input.decision, reason: input.reason ?? null, now };
  const row = approvalSql.decideExecution.get(params);
  if (!row) {
    const current = sql.get.get(input.id);
    const request = approvalSql.get.get(input.id);
    return {
      decided: false,
      record: current && toRecord(current, now),
      approval: request && approvalFromColumns(request),
    };
  }
  const request = approvalSql.recordDecision.get({ ...params, by: input.by, via: input.via });
  if (!request) throw new Error(`the approval request of ${input.id} vanished while it was decided`);
  if (input.decision === 'approved' && request.policy === 'session' && row.session !== null) {
    approvalSql.approveSession.run({ actor: row.actor, session: row.session, tool: row.tool, now });
  }
  appendJournal(sql, input.events, now);
  return { decided: true, record: toRecord(row, now), approval: approvalFromColumns(request) };
}
