import type Database from 'better-sqlite3';
import { type ApprovalColumns, sqlState } from '../sql-columns.js';
import type { ExecutionRow } from './sql.js';

/** The statements of approval requests and approved sessions (see DecideApprovalInput for the rules). */
export interface ApprovalStatements {
  insert: Database.Statement<Record<string, unknown>>;
  get: Database.Statement<[string], ApprovalColumns>;
  list: Database.Statement<{ pending: number; limit: number }, ApprovalColumns>;
  /** The one conditional update that decides: nothing changes unless every condition holds. */
  decideExecution: Database.Statement<Record<string, unknown>, ExecutionRow>;
  recordDecision: Database.Statement<Record<string, unknown>, ApprovalColumns>;
  approveSession: Database.Statement<Record<string, unknown>>;
  sessionApproved: Database.Statement<[string, string, string], { one: number }>;
  trimSessions: Database.Statement<{ cutoff: number }>;
}

export function prepareApprovalStatements(db: Database.Database): ApprovalStatements {
  return {
    insert: db.prepare(`
      INSERT INTO approval_requests (execution_id, policy, channel, target, credential_ref, earlier,
        requested_at, expires_at)
      VALUES (@id, @policy, @channel, @target, @credentialRef, @earlier, @now, @now + @expiresInMs)`),
    get: db.prepare<[string], ApprovalColumns>('SELECT * FROM approval_requests WHERE execution_id = ?'),
    list: db.prepare<{ pending: number; limit: number }, ApprovalColumns>(`
      SELECT * FROM approval_requests
      WHERE (@pending = 0 OR decision IS NULL)
      ORDER BY execution_id DESC
      LIMIT @limit`),
    decideExecution: db.prepare<Record<string, unknown>, ExecutionRow>(`
      UPDATE executions SET
        state = CASE @decision WHEN 'approved' THEN ${sqlState('authorized')} ELSE ${sqlState('denied')} END,
        updated_at = @now,
        claim_token = NULL,
        lease_owner = NULL,
        lease_expires_at = NULL,
        note = CASE @decision WHEN 'approved' THEN note ELSE COALESCE(@reason, @decision) END
      WHERE id = @id
        AND state = ${sqlState('awaiting_approval')}
        AND EXISTS (
          SELECT 1 FROM approval_requests a
          WHERE a.execution_id = @id AND a.decision IS NULL
            AND (CASE WHEN @decision = 'expired' THEN a.expires_at <= @now ELSE a.expires_at > @now END)
        )
      RETURNING *`),
    recordDecision: db.prepare<Record<string, unknown>, ApprovalColumns>(`
      UPDATE approval_requests SET
        decision = @decision, decided_by = @by, decided_via = @via, decided_at = @now,
        reason = COALESCE(@reason, CASE @decision WHEN 'expired' THEN 'expired' END)
      WHERE execution_id = @id
      RETURNING *`),
    approveSession: db.prepare(`
      INSERT INTO session_approvals (actor, session, tool, approved_at)
      VALUES (@actor, @session, @tool, @now)
      ON CONFLICT DO NOTHING`),
    sessionApproved: db.prepare<[string, string, string], { one: number }>(
      'SELECT 1 AS one FROM session_approvals WHERE actor = ? AND session = ? AND tool = ?',
    ),
    trimSessions: db.prepare<{ cutoff: number }>(
      'DELETE FROM session_approvals WHERE approved_at <= @cutoff',
    ),
  };
}
