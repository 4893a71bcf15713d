import type Database from 'better-sqlite3';
import {
  sqlState,
  TASK_JOIN_COLUMNS,
  type TaskColumns,
  type TaskJoinColumns,
  type TaskWatchColumns,
} from '../sql-columns.js';
import type { ExecutionRow } from './sql.js';

/** A holder's writes apply while its execution is dispatched, and only then. */
const DISPATCHED = sqlState('dispatched');

/** The statements of tasks and of the upstream task an execution follows (ExecutionStore.openTask and the rest). */
export interface TaskStatements {
  /** Inserts only for an existing execution, and only the pair's first task. */
  insert: Database.Statement<Record<string, unknown>>;
  get: Database.Statement<[string], TaskColumns>;
  getWithExecution: Database.Statement<[string], ExecutionRow & TaskJoinColumns>;
  find: Database.Statement<[string, string], TaskColumns>;
  list: Database.Statement<{ actor: string; after: string | null; limit: number }, TaskColumns>;
  requestCancel: Database.Statement<{ taskId: string; now: number }>;
  setUpstreamTask: Database.Statement<{ id: string; token: string; handle: string; now: number }>;
  setTaskInput: Database.Statement<{ id: string; token: string; input: string | null; now: number }>;
  updateTaskInput: Database.Statement<{ id: string; input: string; now: number }>;
  watch: Database.Statement<[string], TaskWatchColumns>;
}

export function prepareTaskStatements(db: Database.Database): TaskStatements {
  return {
    insert: db.prepare(`
      INSERT INTO tasks (task_id, execution_id, actor, generation, created_at, ttl_ms, poll_interval_ms)
      SELECT @taskId, id, @actor, @generation, @now, @ttlMs, @pollIntervalMs
      FROM executions WHERE id = @executionId
      ON CONFLICT (execution_id, actor) DO NOTHING`),
    get: db.prepare<[string], TaskColumns>('SELECT * FROM tasks WHERE task_id = ?'),
    getWithExecution: db.prepare<[string], ExecutionRow & TaskJoinColumns>(`
      SELECT e.*, ${TASK_JOIN_COLUMNS}
      FROM tasks t JOIN executions e ON e.id = t.execution_id
      WHERE t.task_id = ?`),
    find: db.prepare<[string, string], TaskColumns>(
      'SELECT * FROM tasks WHERE execution_id = ? AND actor = ?',
    ),
    // No `after`: from '', which every task id sorts after; the index serves both.
    list: db.prepare<{ actor: string; after: string | null; limit: number }, TaskColumns>(`
      SELECT * FROM tasks
      WHERE actor = @actor AND task_id > COALESCE(@after, '')
      ORDER BY task_id
      LIMIT @limit`),
    requestCancel: db.prepare<{ taskId: string; now: number }>(
      'UPDATE tasks SET cancel_requested_at = @now WHERE task_id = @taskId AND cancel_requested_at IS NULL',
    ),
    setUpstreamTask: db.prepare<{ id: string; token: string; handle: string; now: number }>(`
      UPDATE executions SET upstream_task = @handle, updated_at = @now
      WHERE id = @id AND claim_token = @token AND state = ${DISPATCHED}`),
    setTaskInput: db.prepare<{ id: string; token: string; input: string | null; now: number }>(`
      UPDATE executions SET task_input = @input, updated_at = @now
      WHERE id = @id AND claim_token = @token AND state = ${DISPATCHED}`),
    updateTaskInput: db.prepare<{ id: string; input: string; now: number }>(`
      UPDATE executions SET task_input = @input, updated_at = @now
      WHERE id = @id AND state = ${DISPATCHED}`),
    watch: db.prepare<[string], TaskWatchColumns>(`
      SELECT e.state, e.task_input,
        (SELECT min(cancel_requested_at) FROM tasks WHERE execution_id = e.id) AS cancel_requested_at
      FROM executions e WHERE e.id = ?`),
  };
}
