import { sqlState } from '../sql-columns.js';
import { CLOCK } from './sql.js';

/**
 * The statements of approval requests and approved sessions (see
 * DecideApprovalInput for the rules). Times come from the database's clock,
 * like every other time the store keeps.
 */
export const APPROVAL_SQL = {
  insert: {
    name: 'idem_approval_insert',
    text: `
      INSERT INTO approval_requests (execution_id, policy, channel, target, credential_ref, earlier,
        requested_at, expires_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $7::bigint + $8::bigint)`,
  },
  get: {
    name: 'idem_approval_get',
    text: 'SELECT * FROM approval_requests WHERE execution_id = $1',
  },
  list: {
    name: 'idem_approval_list',
    text: `
      SELECT * FROM approval_requests
      WHERE (NOT $1::boolean OR decision IS NULL)
      ORDER BY execution_id DESC
      LIMIT $2`,
  },
  /**
   * The decision, in one statement: the execution's conditional update is the
   * arbiter (of concurrent deciders, the first to lock the row wins; the others
   * re-read it, find it no longer awaiting approval, and change nothing), and the
   * request's and the session's rows follow only from the row it changed.
   * $1 id, $2 decision, $3 by, $4 via, $5 reason.
   */
  decide: {
    name: 'idem_approval_decide',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE executions SET
          state = CASE $2::text WHEN 'approved' THEN ${sqlState('authorized')}::execution_state ELSE ${sqlState('denied')} END,
          updated_at = c.now,
          claim_token = NULL,
          lease_owner = NULL,
          lease_expires_at = NULL,
          note = CASE $2::text WHEN 'approved' THEN note ELSE COALESCE($5::text, $2::text) END
        FROM c
        WHERE id = $1
          AND state = ${sqlState('awaiting_approval')}
          AND EXISTS (
            SELECT FROM approval_requests a
            WHERE a.execution_id = $1 AND a.decision IS NULL
              AND CASE WHEN $2::text = 'expired' THEN a.expires_at <= c.now ELSE a.expires_at > c.now END
          )
        RETURNING id, actor, session, tool, c.now AS read_at
      ),
      req AS (
        UPDATE approval_requests SET
          decision = $2::text, decided_by = $3, decided_via = $4, decided_at = upd.read_at,
          reason = COALESCE($5::text, CASE $2::text WHEN 'expired' THEN 'expired' END)
        FROM upd
        WHERE execution_id = upd.id
        RETURNING approval_requests.*
      ),
      ses AS (
        INSERT INTO session_approvals (approved_at, actor, session, tool)
        SELECT upd.read_at, upd.actor, upd.session, upd.tool FROM upd, req
        WHERE $2::text = 'approved' AND req.policy = 'session' AND upd.session IS NOT NULL
        ON CONFLICT DO NOTHING
      )
      SELECT upd.id FROM upd, req`,
  },
  sessionApproved: {
    name: 'idem_session_approved',
    text: 'SELECT 1 FROM session_approvals WHERE actor = $1 AND session = $2 AND tool = $3',
  },
  trimSessions: {
    name: 'idem_trim_session_approvals',
    text: `DELETE FROM session_approvals WHERE approved_at <= ${CLOCK} - $1::bigint`,
  },
} as const;
