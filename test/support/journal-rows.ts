import type Database from 'better-sqlite3';
import { journalEntryHash, journalRowHash, type RowEvent } from '../../src/journal/chain.js';
import type { JournalColumns } from '../../src/store/sql-columns.js';

/**
 * A SQLite journal table's rows as stored, in either format (docs/adr/0052): a row of one
 * event (`events` NULL, the envelope in its columns), or a row of several (`events` its count,
 * `detail` their RFC 8785 text, `seq` its last event's). What the tamper tests edit.
 */
export type StoredRow = Omit<JournalColumns, 'kind' | 'chain' | 'events'> & {
  /** Any text: a tamper test may write a kind no store would. */
  kind: string;
  events: number | null;
};

export type JournalTable = 'activity_journal' | 'sessions_journal';

/** The hash a stored row of either format must have on `prev`: what a forger recomputes. */
export function storedRowHash(r: StoredRow, prev: string): string {
  if (r.events !== null) return journalRowHash(prev, r.seq, r.at, r.events, r.detail);
  return journalEntryHash(
    prev,
    {
      seq: r.seq,
      at: r.at,
      kind: r.kind,
      executionId: r.execution_id,
      actor: r.actor,
      tool: r.tool,
      requestRef: r.request_ref,
    },
    r.detail,
  );
}

/** The stored row that holds event `seq` (a row's seq is its last event's). */
export function rowHolding(
  db: Database.Database,
  seq: number,
  table: JournalTable = 'activity_journal',
): StoredRow {
  const row = db.prepare(`SELECT * FROM ${table} WHERE seq >= ? ORDER BY seq LIMIT 1`).get(seq) as
    | StoredRow
    | undefined;
  if (!row || row.seq - (row.events ?? 1) >= seq) throw new Error(`no row holds seq ${seq}`);
  return row;
}

/** The seq of a row's first event. */
export function firstSeq(row: StoredRow): number {
  return row.seq - (row.events ?? 1) + 1;
}

/** An event as the tamper tests change it, whichever format its row has. */
export interface EditableEvent {
  kind: string;
  execution_id: string | null;
  actor: string | null;
  tool: string | null;
  request_ref: string | null;
  /** The event's detail as a value (a row of one event keeps it as text: parsed, and written back canonical-free). */
  detail: unknown;
}

/**
 * Changes event `seq` in place (no re-hash), in whichever format its row has; returns the row,
 * as changed (its seq is what verify names).
 */
export function editEvent(
  db: Database.Database,
  seq: number,
  change: (event: EditableEvent) => void,
  table: JournalTable = 'activity_journal',
): StoredRow {
  const row = rowHolding(db, seq, table);
  if (row.events === null) {
    const event: EditableEvent = { ...row, detail: JSON.parse(row.detail) };
    change(event);
    Object.assign(row, { ...event, detail: JSON.stringify(event.detail) });
  } else {
    const events = JSON.parse(row.detail) as RowEvent[];
    const at = seq - firstSeq(row);
    const [kind, execution_id, actor, tool, request_ref, detail] = events[at] as RowEvent;
    const event: EditableEvent = { kind, execution_id, actor, tool, request_ref, detail };
    change(event);
    events[at] = [event.kind, event.execution_id, event.actor, event.tool, event.request_ref, event.detail];
    row.detail = JSON.stringify(events);
  }
  putRow(db, row, table);
  return row;
}

/** Writes `row` over the stored row of its seq, every column. */
export function putRow(
  db: Database.Database,
  row: StoredRow,
  table: JournalTable = 'activity_journal',
  target = row.seq,
): void {
  db.prepare(
    `UPDATE ${table} SET at=@at, kind=@kind, execution_id=@execution_id, actor=@actor, tool=@tool, request_ref=@request_ref,
       detail=@detail, prev_hash=@prev_hash, hash=@hash, events=@events WHERE seq=@target`,
  ).run({ ...row, target });
}

/** The seq of the first event of `kind` of one execution, in either format. */
export function eventSeqOf(db: Database.Database, executionId: string, kind: string): number {
  for (const row of db
    .prepare('SELECT * FROM activity_journal ORDER BY seq')
    .iterate() as Iterable<StoredRow>) {
    if (row.events === null) {
      if (row.execution_id === executionId && row.kind === kind) return row.seq;
      continue;
    }
    const events = JSON.parse(row.detail) as RowEvent[];
    const i = events.findIndex((e) => e[1] === executionId && e[0] === kind);
    if (i >= 0) return firstSeq(row) + i;
  }
  throw new Error(`no ${kind} event for ${executionId}`);
}
