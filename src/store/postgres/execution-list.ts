import { EXECUTION_STATES, type ExecutionState } from '../../journal/states.js';
import { type ExecutionFilter, SEARCH_JOURNAL_WINDOW } from '../execution-filter.js';
import { JOURNAL_SEQ_BLOCK } from './journal-rows.js';
import { CLOCK, COLUMNS } from './sql.js';

/**
 * The executions' list and counts (ExecutionFilter), as SQLite's
 * execution-list.ts says them. Unnamed statements: planned with the values
 * given, so the `$n IS NULL OR …` of an absent filter folds away and a page
 * is read from the id index from `before` down.
 */
const NARROWED = `
  ($1::text IS NULL OR tool = $1)
  AND ($2::text IS NULL OR actor = $2)
  AND ($3::text IS NULL OR session = $3)
  AND ($4::bigint IS NULL OR created_at >= $4::bigint)
  AND ($5::text IS NULL
    OR left(id, length($5)) = $5
    OR tool = $5 OR actor = $5
    OR strpos(arguments_preview, $5) > 0
    OR id IN (SELECT execution_id FROM tasks WHERE task_id = $5)
    OR id IN (SELECT execution_id FROM activity_journal
      WHERE request_ref = $5 AND execution_id IS NOT NULL
        AND seq > (SELECT coalesce(max(seq), 0) FROM activity_journal) - ${SEARCH_JOURNAL_WINDOW})
    -- A row of several events (migration 8) keeps each event's request ref and execution id in
    -- its detail: [kind, execution_id, actor, tool, request_ref, detail] (journal_row_refs,
    -- migration 8). Only rows whose text holds the ref as a JSON string are parsed. Each such
    -- row took a block of JOURNAL_SEQ_BLOCK seqs, so this span holds at most
    -- SEARCH_JOURNAL_WINDOW of them.
    OR id IN (SELECT e.execution_id FROM activity_journal j, journal_row_refs(j.detail) e
      WHERE j.events IS NOT NULL AND strpos(j.detail, to_json($5::text)::text) > 0
        AND e.request_ref = $5 AND e.execution_id IS NOT NULL
        AND j.seq > (SELECT coalesce(max(seq), 0) FROM activity_journal)
          - ${SEARCH_JOURNAL_WINDOW * JOURNAL_SEQ_BLOCK}))`;

export const LIST_SQL = {
  list: `
    WITH c AS MATERIALIZED (SELECT ${CLOCK} AS now)
    SELECT ${COLUMNS}, c.now AS read_at FROM executions, c
    WHERE ${NARROWED}
      AND ($6::execution_state[] IS NULL OR state = ANY($6::execution_state[]))
      AND ($7::text IS NULL OR id < $7)
      AND (NOT $8::boolean OR upstream_task IS NOT NULL)
    ORDER BY id DESC
    LIMIT $9`,
  counts: `SELECT state::text AS state, count(*)::integer AS n FROM executions WHERE ${NARROWED} GROUP BY state`,
};

function narrowing(filter: ExecutionFilter): unknown[] {
  return [
    filter.tool ?? null,
    filter.actor ?? null,
    filter.session ?? null,
    filter.since ?? null,
    filter.text ?? null,
  ];
}

export function listParams(filter: ExecutionFilter): unknown[] {
  return [
    ...narrowing(filter),
    filter.state === undefined ? null : ([] as ExecutionState[]).concat(filter.state),
    filter.before ?? null,
    filter.upstreamTask === true,
    filter.limit ?? 100,
  ];
}

export const countParams = narrowing;

export function countsOf(rows: { state: ExecutionState; n: number }[]): Record<ExecutionState, number> {
  const counts = Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<ExecutionState, number>;
  for (const row of rows) counts[row.state] = row.n;
  return counts;
}
