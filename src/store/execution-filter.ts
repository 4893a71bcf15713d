import type { ExecutionState } from '../journal/states.js';

/**
 * Which executions `ExecutionStore.list` and `countByState` answer with. Every
 * field narrows; all stores read it the same way (the contract suite holds them to it).
 */
export interface ExecutionFilter {
  state?: ExecutionState | readonly ExecutionState[];
  tool?: string;
  actor?: string;
  /** The transport session that created it. */
  session?: string;
  /** createdAt >= since */
  since?: number;
  /** Only executions that carry an upstream's task (ExecutionRecord.upstreamTask set). */
  upstreamTask?: boolean;
  /**
   * Ids below this one only: the next page after a page whose last id it is
   * (a list is newest first by id), read from the index, however deep the page.
   */
  before?: string;
  /** Executions the text names: see matchesSearch. */
  text?: string;
  limit?: number;
}

/** What counts are narrowed by: a filter without its state and without a page. */
export type ExecutionCountFilter = Omit<ExecutionFilter, 'state' | 'before' | 'limit' | 'upstreamTask'>;

/**
 * A request id is found among this many newest activity journal entries: the
 * search stays bounded without an index on every journal row's request (which
 * every write would pay for). An older request is found by its execution's ref.
 */
export const SEARCH_JOURNAL_WINDOW = 100_000;

/**
 * What a search text names (case-sensitive, as ids are): an execution whose ref
 * starts with it, whose tool or actor is it, whose arguments preview (already
 * redacted) contains it, or one of whose MCP tasks it is, or whose request it
 * is (within SEARCH_JOURNAL_WINDOW). `named` holds the executions named by a
 * task id or request id, which the caller looked up.
 */
export function matchesSearch(
  record: { id: string; tool: string; actor: string; argumentsPreview: string },
  text: string,
  named: ReadonlySet<string>,
): boolean {
  return (
    record.id.startsWith(text) ||
    record.tool === text ||
    record.actor === text ||
    record.argumentsPreview.includes(text) ||
    named.has(record.id)
  );
}
