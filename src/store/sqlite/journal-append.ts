import { buildRow, GENESIS_HASH } from '../../journal/chain.js';
import type { ActivityEventInput, JournalStream } from '../../journal/events.js';
import { journalRowValues, type Statements } from './sql.js';

/**
 * A transaction's journal row (docs/adr/0052: one row per transaction, carrying its events in
 * order), hashed onto the chain's head as read inside the transaction, not yet written:
 * `values` are its columns in JOURNAL_COLUMNS order; `timelines` the executions it names,
 * each with the row's seq.
 */
export interface JournalBatch {
  stream: JournalStream;
  values: unknown[];
  timelines: Map<string, number>;
}

/**
 * Appends `events` to a journal's hash chain as one row. Runs inside the caller's transaction,
 * so the head it extends cannot move underneath it, and the row commits with the change it
 * describes or not at all.
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

/** The row `events` become on the chain's head now (nothing written yet: writeJournal does). */
export function buildJournal(
  sql: Statements,
  events: ActivityEventInput[] | undefined,
  now: number,
  stream: JournalStream = 'activity',
): JournalBatch | undefined {
  if (!events || events.length === 0) return undefined;
  const head = sql.journal[stream].head.get();
  // The events are stored as the canonical text the hash covers: a verifier hashes the bytes as stored.
  const row = buildRow(events, head?.seq ?? 0, now, head?.hash ?? GENESIS_HASH);
  const timelines = new Map<string, number>();
  if (stream === 'activity') {
    for (const event of events) if (event.executionId != null) timelines.set(event.executionId, row.seq);
  }
  return { stream, values: journalRowValues(row), timelines };
}

/**
 * The row's seq if `batch` names execution `id`, for the execution row's journal_seqs, taken out
 * of the batch: the caller writes it with the row (one statement less), writeJournal does not.
 */
export function takeTimeline(batch: JournalBatch | undefined, id: string): string | null {
  const seq = batch?.timelines.get(id);
  if (seq === undefined) return null;
  batch?.timelines.delete(id);
  return String(seq);
}

/** Writes the batch's row and names it where journalFor finds it. */
export function writeJournal(sql: Statements, batch: JournalBatch): void {
  sql.journal[batch.stream].insert.run(batch.values);
  noteTimelines(sql, batch.timelines);
}

/**
 * Names the row for each execution it holds events of, where journalFor finds it (migration 7):
 * on the execution's row, which the transaction has nearly always written already (no page of
 * its own in the WAL), or in journal_refs for an id with no row. journal_seqs lists rows' seqs:
 * a row of the earlier format's seq is its one event's.
 */
function noteTimelines(sql: Statements, timelines: Map<string, number>): void {
  for (const [id, seq] of timelines) {
    if (sql.noteJournalSeqs.run({ id, journalSeqs: String(seq) }).changes === 1) continue;
    sql.journalRef.run(id, seq);
  }
}
