import { rowEventsText } from '../../journal/chain.js';
import type { ActivityEventInput } from '../../journal/events.js';

/**
 * How many seqs one nextval of a stream's journal sequence reserves (migration 8, its
 * INCREMENT; docs/adr/0053): the most events a row holds. A row's events are seq−n+1 … seq
 * (ADR 0052), and every chain of the stream draws from the one sequence, so a row's events get
 * seqs no other writer can be given without any writer waiting for another. Fixed by a shipped
 * migration: changing it here alone would let rows overlap, and journal_append_rows refuses a
 * row larger than its own 8.
 */
export const JOURNAL_SEQ_BLOCK = 8;

/**
 * The journal parameters of a statement that appends `events` to `chain`
 * (journal_append_rows, migration 8): the chain, how many events each row
 * holds, each row's RFC 8785 text (chain.ts rowEventsText: the database hashes
 * it as sent, so JSON is encoded in one place), and the execution ids each row
 * holds events of, as (row, id) pairs for journal_refs. A transaction's events
 * are one row, or rows of JOURNAL_SEQ_BLOCK in order when there are more.
 */
export function journalParams(events: ActivityEventInput[], chain: number | null): unknown[] {
  if (events.length === 0) return [chain, null, null, null, null];
  const counts: number[] = [];
  const texts: string[] = [];
  const refRows: number[] = [];
  const refIds: string[] = [];
  for (let from = 0; from < events.length; from += JOURNAL_SEQ_BLOCK) {
    const row = events.slice(from, from + JOURNAL_SEQ_BLOCK);
    counts.push(row.length);
    texts.push(rowEventsText(row));
    const ids = new Set<string>();
    for (const e of row) if (e.executionId != null) ids.add(e.executionId);
    for (const id of ids) {
      refRows.push(counts.length);
      refIds.push(id);
    }
  }
  return [chain, counts, texts, refRows, refIds];
}
