import { buildEntry, GENESIS_HASH } from '../../journal/chain.js';
import type { ActivityEventInput, JournalStream } from '../../journal/events.js';
import type { Statements } from './sql.js';

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
  if (!events || events.length === 0) return;
  const journal = sql.journal[stream];
  const head = journal.head.get();
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? GENESIS_HASH;
  const timelines = new Map<string, number[]>();
  for (const event of events) {
    // The detail is stored as the canonical text the hash covers: a verifier hashes the bytes as stored.
    const { entry, detailText } = buildEntry(event, ++seq, now, prevHash);
    journal.append.run({
      seq: entry.seq,
      at: entry.at,
      kind: entry.kind,
      executionId: entry.executionId,
      actor: entry.actor,
      tool: entry.tool,
      requestRef: entry.requestRef,
      detail: detailText,
      prevHash: entry.prevHash,
      hash: entry.hash,
    });
    prevHash = entry.hash;
    if (stream === 'activity' && entry.executionId !== null) {
      const seqs = timelines.get(entry.executionId);
      if (seqs) seqs.push(entry.seq);
      else timelines.set(entry.executionId, [entry.seq]);
    }
  }
  noteTimelines(sql, timelines);
}

/**
 * Names each execution's new entries where journalFor finds them (migration 7): on its row, which
 * the transaction has nearly always written already (no page of its own in the WAL), or in
 * journal_refs for an id with no row.
 */
function noteTimelines(sql: Statements, timelines: Map<string, number[]>): void {
  for (const [id, seqs] of timelines) {
    if (sql.noteJournalSeqs.run({ id, seqs: seqs.join(',') }).changes === 1) continue;
    for (const seq of seqs) sql.journalRef.run(id, seq);
  }
}
