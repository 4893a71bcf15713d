import type { ActivityEntry, JournalStream } from '../../journal/events.js';
import { entriesFromColumns } from '../sql-columns.js';
import type { Statements } from './sql.js';

/**
 * The entries after `afterSeq`, at most `limit`: the rows whose last event is after it (a row of
 * several events, ADR 0052, may begin at or before it), unfolded into their events.
 */
export function readJournalEntries(
  sql: Statements,
  stream: JournalStream,
  afterSeq: number,
  limit: number,
): ActivityEntry[] {
  return sql.journal[stream].read
    .all(afterSeq, limit)
    .flatMap(entriesFromColumns)
    .filter((e) => e.seq > afterSeq)
    .slice(0, limit);
}

/** One execution's entries: the rows journal_seqs and journal_refs name, its events only. */
export function journalEntriesFor(sql: Statements, executionId: string): ActivityEntry[] {
  return sql.journalFor
    .all({ id: executionId })
    .flatMap(entriesFromColumns)
    .filter((e) => e.executionId === executionId);
}
