import type { ActivityEntry } from '../../journal/events.js';
import { EXECUTION_STATES, type ExecutionState } from '../../journal/states.js';
import { type ExecutionFilter, matchesSearch, SEARCH_JOURNAL_WINDOW } from '../execution-filter.js';
import type { ExecutionRecord } from '../types.js';

type Row = Omit<ExecutionRecord, 'readAt'>;

/**
 * The memory store's list and counts: a scan of every row, which is what a
 * memory store has (it holds what one process ran). The SQL stores say the same in SQL.
 */
export class MemoryExecutionList {
  constructor(
    private readonly rows: () => Iterable<Row>,
    private readonly activity: () => readonly ActivityEntry[],
    private readonly executionOfTask: (taskId: string) => string | undefined,
  ) {}

  list(filter: ExecutionFilter): Row[] {
    const out = [...this.#matching(filter)];
    out.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return out.slice(0, filter.limit ?? 100);
  }

  countByState(filter: ExecutionFilter): Record<ExecutionState, number> {
    const counts = Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<ExecutionState, number>;
    for (const row of this.#matching({ ...filter, state: undefined, before: undefined, upstreamTask: false }))
      counts[row.state]++;
    return counts;
  }

  *#matching(filter: ExecutionFilter): Iterable<Row> {
    const states = filter.state === undefined ? undefined : ([] as ExecutionState[]).concat(filter.state);
    const text = filter.text;
    const named = text === undefined ? new Set<string>() : this.#named(text);
    for (const row of this.rows()) {
      if (states && !states.includes(row.state)) continue;
      if (filter.tool !== undefined && row.tool !== filter.tool) continue;
      if (filter.actor !== undefined && row.actor !== filter.actor) continue;
      if (filter.session !== undefined && row.session !== filter.session) continue;
      if (filter.since !== undefined && row.createdAt < filter.since) continue;
      if (filter.before !== undefined && row.id >= filter.before) continue;
      if (filter.upstreamTask && row.upstreamTask === null) continue;
      if (text !== undefined && !matchesSearch(row, text, named)) continue;
      yield row;
    }
  }

  /** The executions a task id or a recent request id names. */
  #named(text: string): Set<string> {
    const named = new Set<string>();
    const task = this.executionOfTask(text);
    if (task !== undefined) named.add(task);
    for (const entry of this.activity().slice(-SEARCH_JOURNAL_WINDOW))
      if (entry.requestRef === text && entry.executionId) named.add(entry.executionId);
    return named;
  }
}
