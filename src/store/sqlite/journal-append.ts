import { buildEntry, GENESIS_HASH } from '../../journal/chain.js';
import type { ActivityEventInput, JournalStream } from '../../journal/events.js';
import { JOURNAL_COLUMNS, journalColumnValues, type Statements } from './sql.js';

/**
 * A transaction's new journal entries, hashed onto the chain's head as read inside the
 * transaction, not yet written: `values` are their columns in JOURNAL_COLUMNS order, one run
 * of them per entry; `timelines` the seqs each execution id gets.
 */
export interface JournalBatch {
  stream: JournalStream;
  values: unknown[];
  timelines: Map<string, number[]>;
}

/**
 * Appends `events` to a journal's hash chain. Runs inside the caller's transaction, so the
 * head it extends cannot move underneath it, and the entries commit with the change they
 * describe or not at all.
 */
export function appendJournal(
  sql: Statements,
  events: ActivityEventInput[] | undefined,
  now: number,
  stream: JournalStream = 'activity',
): void {
  const batch = buildJournal(sql, events, now, stream);
  if (batch) writeJournal(sql, batch);
}

/** The entries `events` become on the chain's head now (nothing written yet: writeJournal does). */
export function buildJournal(
  sql: Statements,
  events: ActivityEventInput[] | undefined,
  now: number,
  stream: JournalStream = 'activity',
): JournalBatch | undefined {
  if (!events || events.length === 0) return undefined;
  const head = sql.journal[stream].head.get();
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? GENESIS_HASH;
  const values: unknown[] = [];
  const timelines = new Map<string, number[]>();
  for (const event of events) {
    // The detail is stored as the canonical text the hash covers: a verifier hashes the bytes as stored.
    const { entry, detailText } = buildEntry(event, ++seq, now, prevHash);
    values.push(...journalColumnValues(entry, detailText));
    prevHash = entry.hash;
    if (stream === 'activity' && entry.executionId !== null) {
      const seqs = timelines.get(entry.executionId);
      if (seqs) seqs.push(entry.seq);
      else timelines.set(entry.executionId, [entry.seq]);
    }
  }
  return { stream, values, timelines };
}

/**
 * The seqs `batch` gives execution `id`, comma-separated, for the row's journal_seqs, taken out
 * of the batch: the caller writes them with the row (one statement less), writeJournal does not.
 */
export function takeTimeline(batch: JournalBatch | undefined, id: string): string | null {
  const seqs = batch?.timelines.get(id);
  if (!seqs) return null;
  batch?.timelines.delete(id);
  return seqs.join(',');
}

/** Writes the batch's entries (several per statement) and names them where journalFor finds them. */
export function writeJournal(sql: Statements, batch: JournalBatch): void {
  const journal = sql.journal[batch.stream];
  const width = JOURNAL_COLUMNS.length;
  const rows = batch.values.length / width;
  for (let first = 0; first < rows; first += journal.rowsPerInsert) {
    const count = Math.min(journal.rowsPerInsert, rows - first);
    journal.insertRows(count).run(batch.values.slice(first * width, (first + count) * width));
  }
  noteTimelines(sql, batch.timelines);
}

/**
 * Names each execution's new entries where journalFor finds them (migration 7): on its row, which
 * the transaction has nearly always written already (no page of its own in the WAL), or in
 * journal_refs for an id with no row.
 */
function noteTimelines(sql: Statements, timelines: Map<string, number[]>): void {
  for (const [id, seqs] of timelines) {
    if (sql.noteJournalSeqs.run({ id, journalSeqs: seqs.join(',') }).changes === 1) continue;
    for (const seq of seqs) sql.journalRef.run(id, seq);
  }
}
