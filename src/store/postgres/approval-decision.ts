import { type ApprovalColumns, approvalFromColumns } from '../sql-columns.js';
import type { DecideApprovalInput, DecideApprovalResult } from '../types.js';
import { APPROVAL_SQL } from './approval-sql.js';
import type { JournalChains } from './journal-chains.js';
import { type ExecutionRow, SQL, toRecord } from './sql.js';
import { type Connections, query } from './transactions.js';

/**
 * The decision on an approval request: one transaction in which the one conditional
 * update decides (approval-sql.ts) or nothing changes; a decision's journal entries commit
 * with it.
 */
export async function writeDecision(
  db: Connections,
  chains: JournalChains,
  input: DecideApprovalInput,
): Promise<DecideApprovalResult> {
  const events = input.events ?? [];
  return chains.withEvents(events, (journal) =>
    db.transaction(async (tx) => {
      const decide = query<{ id: string }>(APPROVAL_SQL.decide, [
        input.id,
        input.decision,
        input.by,
        input.via,
        input.reason ?? null,
      ])(tx.db);
      const [decided] = (await decide).rows;
      const read = async () => {
        const [execution, request] = await Promise.all([
          query<ExecutionRow>(SQL.get, [input.id])(tx.db),
          query<ApprovalColumns>(APPROVAL_SQL.get, [input.id])(tx.db),
        ]);
        const row = execution.rows[0];
        const approval = request.rows[0];
        return { record: row && toRecord(row), approval: approval && approvalFromColumns(approval) };
      };
      if (!decided) {
        const now = await read();
        tx.rollback();
        return { decided: false, ...now };
      }
      // The chain's head is locked after the decision, so it is held from here to COMMIT only.
      if (events.length > 0) tx.defer(query(SQL.append.sync, ['activity', ...journal])(tx.db));
      const now = await read();
      if (!now.record || !now.approval) throw new Error(`the decision on ${input.id} cannot be read back`);
      return { decided: true, record: now.record, approval: now.approval };
    }),
  );
}
