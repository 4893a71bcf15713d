import type Database from 'better-sqlite3';
import { EXECUTION_STATES, type ExecutionState } from '../../journal/states.js';
import { type ExecutionFilter, SEARCH_JOURNAL_WINDOW } from '../execution-filter.js';
import type { ExecutionRow } from './sql.js';

/**
 * The executions' list and counts (ExecutionFilter). A page is read from the
 * id index, newest first, from `before` down, so a deep page costs what the
 * first does. The search (matchesSearch) looks a task id up by its key and a
 * request id in the journal rows of the newest SEARCH_JOURNAL_WINDOW events only.
 */
const NARROWED = `
  (@tool IS NULL OR tool = @tool)
  AND (@actor IS NULL OR actor = @actor)
  AND (@session IS NULL OR session = @session)
  AND (@since IS NULL OR created_at >= @since)
  AND (@text IS NULL
    OR substr(id, 1, length(@text)) = @text
    OR tool = @text OR actor = @text
    OR instr(arguments_preview, @text) > 0
    OR id IN (SELECT execution_id FROM tasks WHERE task_id = @text)
    OR id IN (SELECT execution_id FROM activity_journal
      WHERE request_ref = @text AND execution_id IS NOT NULL
        AND seq > (SELECT coalesce(max(seq), 0) FROM activity_journal) - ${SEARCH_JOURNAL_WINDOW})
    -- A row of several events (migration 9) keeps each event's request ref and execution id in
    -- its detail: [kind, execution_id, actor, tool, request_ref, detail].
    OR id IN (SELECT e.value ->> 1 FROM activity_journal j, json_each(j.detail) e
      WHERE j.events IS NOT NULL AND e.value ->> 4 = @text AND e.value ->> 1 IS NOT NULL
        AND j.seq > (SELECT coalesce(max(seq), 0) FROM activity_journal) - ${SEARCH_JOURNAL_WINDOW}))`;

export interface ListStatements {
  list: Database.Statement<Record<string, unknown>, ExecutionRow>;
  counts: Database.Statement<Record<string, unknown>, { state: ExecutionState; n: number }>;
  /** Unfiltered counts: from the (state, updated_at) index alone, never the rows. */
  allCounts: Database.Statement<[], { state: ExecutionState; n: number }>;
}

export function prepareListStatements(db: Database.Database): ListStatements {
  return {
    // `id < coalesce(@before, x'')`: a BLOB sorts after every text, so without a page it admits every
    // id — and, unlike `@before IS NULL OR …`, it is a range the planner reads the id index from.
    list: db.prepare(`
      SELECT * FROM executions
      WHERE id < coalesce(@before, x'')
        AND (@states IS NULL OR state IN (SELECT value FROM json_each(@states)))
        AND (@upstreamTask = 0 OR upstream_task IS NOT NULL)
        AND ${NARROWED}
      ORDER BY id DESC
      LIMIT @limit`),
    counts: db.prepare(`SELECT state, count(*) AS n FROM executions WHERE ${NARROWED} GROUP BY state`),
    allCounts: db.prepare('SELECT state, count(*) AS n FROM executions GROUP BY state'),
  };
}

function narrowing(filter: ExecutionFilter) {
  return {
    tool: filter.tool ?? null,
    actor: filter.actor ?? null,
    session: filter.session ?? null,
    since: filter.since ?? null,
    text: filter.text ?? null,
  };
}

export function listParams(filter: ExecutionFilter): Record<string, unknown> {
  return {
    ...narrowing(filter),
    states: filter.state === undefined ? null : JSON.stringify(([] as ExecutionState[]).concat(filter.state)),
    before: filter.before ?? null,
    upstreamTask: filter.upstreamTask ? 1 : 0,
    limit: filter.limit ?? 100,
  };
}

export function countByState(sql: ListStatements, filter: ExecutionFilter): Record<ExecutionState, number> {
  const params = narrowing(filter);
  const rows = Object.values(params).every((v) => v === null) ? sql.allCounts.all() : sql.counts.all(params);
  const counts = Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<ExecutionState, number>;
  for (const row of rows) counts[row.state] = row.n;
  return counts;
}
