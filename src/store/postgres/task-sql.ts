import { sqlState, TASK_JOIN_COLUMNS } from '../sql-columns.js';
import { CLOCK, COLUMNS, JOURNALED, journalAfter, type Statement } from './sql.js';

/** A holder's writes apply while its execution is dispatched, and only then. */
const DISPATCHED = sqlState('dispatched');

/**
 * The statements of tasks and of the upstream task an execution follows (ExecutionStore.openTask
 * and the rest). A write and its journal entries are one statement, as for executions (sql.ts),
 * and every one commits synchronously: a task's existence and its cancel are what the client is
 * told, and the upstream's task is what another gateway resumes following.
 */
export const TASK_SQL = {
  /**
   * $1 journal?, $2 ttl, $3 poll interval, $4 task id, $5 execution id, $6 actor, $7 generation,
   * then the journal's ($8…). Inserts only for an existing execution, and only the pair's first task.
   */
  open: {
    name: 'idem_task_open',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      ins AS (
        INSERT INTO tasks (created_at, ttl_ms, poll_interval_ms, task_id, execution_id, actor, generation)
        SELECT c.now, $2::bigint, $3::bigint, $4, e.id, $6, $7 FROM c, executions e WHERE e.id = $5
        ON CONFLICT (execution_id, actor) DO NOTHING
        RETURNING *, created_at AS read_at
      ),
      ${journalAfter('ins', 8)}
      SELECT ins.*, ${JOURNALED} FROM ins`,
  },
  get: { name: 'idem_task_get', text: 'SELECT * FROM tasks WHERE task_id = $1' },
  // The execution's columns from a subquery of its own, so that none meets a task's of the same name.
  getWithExecution: {
    name: 'idem_task_get_with_execution',
    text: `
      SELECT e.*, ${TASK_JOIN_COLUMNS}, ${CLOCK} AS read_at
      FROM tasks t, LATERAL (SELECT ${COLUMNS} FROM executions WHERE id = t.execution_id) e
      WHERE t.task_id = $1`,
  },
  find: { name: 'idem_task_find', text: 'SELECT * FROM tasks WHERE execution_id = $1 AND actor = $2' },
  // No `after`: from '', which every task id sorts after; the index serves both.
  list: {
    name: 'idem_task_list',
    text: `
      SELECT * FROM tasks
      WHERE actor = $1 AND task_id > coalesce($2::text, '')
      ORDER BY task_id
      LIMIT $3`,
  },
  /** $1 journal?, $2 task id, then the journal's ($3…). Of concurrent cancels, the first to lock the row sets it. */
  requestCancel: {
    name: 'idem_task_request_cancel',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE tasks SET cancel_requested_at = c.now FROM c
        WHERE task_id = $2 AND cancel_requested_at IS NULL
        RETURNING tasks.*, c.now AS read_at
      ),
      ${journalAfter('upd', 3)}
      SELECT upd.*, ${JOURNALED} FROM upd`,
  },
  /** $1 journal?, $2 execution id, $3 claim token, $4 the handle's JSON, then the journal's ($5…). */
  setUpstreamTask: {
    name: 'idem_set_upstream_task',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE executions SET upstream_task = $4, updated_at = c.now FROM c
        WHERE id = $2 AND claim_token = $3 AND state = ${DISPATCHED}
        RETURNING c.now AS read_at
      ),
      ${journalAfter('upd', 5)}
      SELECT upd.read_at, ${JOURNALED} FROM upd`,
  },
  /**
   * $1 journal?, $2 execution id, $3 claim token, $4 the requests' JSON or null (clears), then the
   * journal's ($5…). The input's JSON is built here, asked at the database's clock.
   */
  setTaskInput: {
    name: 'idem_set_task_input',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE executions SET updated_at = c.now, task_input = CASE WHEN $4::text IS NULL THEN NULL
          ELSE json_build_object('requests', $4::json, 'answers', '{}'::json, 'askedAt', c.now)::text END
        FROM c
        WHERE id = $2 AND claim_token = $3 AND state = ${DISPATCHED}
        RETURNING c.now AS read_at
      ),
      ${journalAfter('upd', 5)}
      SELECT upd.read_at, ${JOURNALED} FROM upd`,
  },
  /**
   * $1 journal?, $2 execution id, $3 claim token, $4 the requests' JSON, then the journal's ($5…):
   * one statement on the locked row, so an answer taken meanwhile is never lost. A key asked
   * already keeps its request (the right side of `||` wins), as addedRequests says.
   */
  addTaskInput: {
    name: 'idem_add_task_input',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE executions SET updated_at = c.now, task_input = CASE WHEN task_input IS NULL
          THEN json_build_object('requests', $4::json, 'answers', '{}'::json, 'askedAt', c.now)::text
          ELSE jsonb_set(task_input::jsonb, '{requests}', $4::jsonb || (task_input::jsonb -> 'requests'))::text END
        FROM c
        WHERE id = $2 AND claim_token = $3 AND state = ${DISPATCHED}
        RETURNING c.now AS read_at
      ),
      ${journalAfter('upd', 5)}
      SELECT upd.read_at, ${JOURNALED} FROM upd`,
  },
  /**
   * $1 journal?, $2 execution id, $3 the input as read, $4 the input with the answers taken, then
   * the journal's ($5…): a compare-and-set, so that of two answers read together only one lands
   * and the other reads again (tasks.ts).
   */
  answerTaskInput: {
    name: 'idem_answer_task_input',
    text: `
      WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now),
      upd AS (
        UPDATE executions SET task_input = $4, updated_at = c.now FROM c
        WHERE id = $2 AND state = ${DISPATCHED} AND task_input = $3
        RETURNING c.now AS read_at
      ),
      ${journalAfter('upd', 5)}
      SELECT upd.read_at, ${JOURNALED} FROM upd`,
  },
  /** What a task's holder watches for: its execution's state and input, and the first cancel of any of its tasks. */
  watch: {
    name: 'idem_task_watch',
    text: `
      SELECT e.state, e.task_input,
        (SELECT min(cancel_requested_at) FROM tasks WHERE execution_id = e.id) AS cancel_requested_at
      FROM executions e WHERE e.id = $1`,
  },
} as const satisfies Record<string, Statement>;
