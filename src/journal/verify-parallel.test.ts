import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildJournalFile } from '../../bench/journal.js';
import { JOURNAL_COLUMNS, journalRowValues } from '../store/sqlite/sql.js';
import { buildRow } from './chain.js';
import { sqliteJournalRows } from './sources.js';
import { verifyJournal } from './verify.js';
import { verifySqliteJournal } from './verify-parallel.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-verify-parallel-'));
// Four chunks of 16,384 rowids, with workers started below their usual threshold: every range
// case (first, last, a boundary) on a file that builds in seconds.
const N = 65_536;
const PARALLEL = { workers: 2, parallelFrom: 0 };
let path: string;
// Rows of the one-row-per-transaction format (3 then 2 events, docs/adr/0052): as many rows as `path` has.
const ROWS_EVENTS = (N / 2) * 5;
let rowsPath: string;
beforeAll(async () => {
  path = await buildJournalFile(dir, N, 'events');
  rowsPath = await buildJournalFile(dir, ROWS_EVENTS, 'rows');
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tampered(name: string, sql: string, from = path): string {
  const copy = join(dir, `${name}.db`);
  copyFileSync(from, copy);
  const db = new Database(copy);
  db.exec('DROP TRIGGER activity_journal_no_update; DROP TRIGGER activity_journal_no_delete;');
  db.exec(sql);
  db.close();
  return copy;
}

describe('verifySqliteJournal (rowid ranges on every core)', () => {
  it('an intact journal: the same verdict as the sequential scan', async () => {
    const parallel = await verifySqliteJournal(path, 'activity', PARALLEL);
    expect(parallel).toEqual(await verifyJournal(sqliteJournalRows(path)));
    expect(parallel).toMatchObject({ ok: true, entries: N, lastSeq: N });
  });

  it.each([
    ['edited in the first range', `UPDATE activity_journal SET actor = 'x' WHERE seq = 1000`, 1000, 'edited'],
    [
      'edited in the last range',
      `UPDATE activity_journal SET actor = 'x' WHERE seq = ${N - 10}`,
      N - 10,
      'edited',
    ],
    [
      'deleted at a range boundary',
      `DELETE FROM activity_journal WHERE seq = ${N / 2 + 1}`,
      N / 2 + 1,
      'missing',
    ],
    // The fast path hashes the text SQLite spells (chain.SQL_ENTRY_BODY): these are the edits it could miss if it got that wrong.
    [
      'a NUL and more appended to a detail',
      `UPDATE activity_journal SET detail = detail || CAST(x'00' AS TEXT) || 'x' WHERE seq = 5000`,
      5000,
      'edited',
    ],
    [
      'only a prev_hash changed',
      `UPDATE activity_journal SET prev_hash = hash WHERE seq = 7000`,
      7000,
      'reordered',
    ],
    // A far-off rowid: the span is huge, the rows are not — and beyond 2^53 JavaScript cannot count them exactly.
    ...[2 ** 40, 2 ** 62].map((rowid) => [
      `a row added at rowid ${rowid}`,
      `INSERT INTO activity_journal SELECT ${rowid}, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash, events
       FROM activity_journal WHERE seq = 10`,
      N + 1,
      'missing',
    ]),
  ] as [string, string, number, string][])(
    '%s: exactly the sequential report',
    async (name, sql, seq, problem) => {
      const copy = tampered(name.replaceAll(' ', '-'), sql);
      const parallel = await verifySqliteJournal(copy, 'activity', PARALLEL);
      expect(parallel.firstBad).toMatchObject({ seq, problem });
      expect(parallel).toEqual(await verifyJournal(sqliteJournalRows(copy)));
    },
  );

  it('a detail stored in another spelling of the same JSON: the fast path defers, the exact scan names it edited', async () => {
    const copy = tampered(
      'respelled',
      `UPDATE activity_journal SET detail = ' ' || detail WHERE seq = 1 OR seq = ${N - 1}`,
    );
    const parallel = await verifySqliteJournal(copy, 'activity', PARALLEL);
    expect(parallel).toMatchObject({ ok: false, firstBad: { seq: 1, problem: 'edited' } });
    expect(parallel.firstBad?.message).toMatch(/not in canonical form/);
    expect(parallel).toEqual(await verifyJournal(sqliteJournalRows(copy)));
  });
});

describe('verifySqliteJournal on rows of several events (one row per transaction)', () => {
  // Rows hold seqs 5k+1…5k+3 and 5k+4…5k+5: a row's seq (its rowid) is its last event's.
  it('an intact journal: every event counted, the same verdict as the sequential scan', async () => {
    const parallel = await verifySqliteJournal(rowsPath, 'activity', PARALLEL);
    expect(parallel).toEqual(await verifyJournal(sqliteJournalRows(rowsPath)));
    expect(parallel).toMatchObject({ ok: true, entries: ROWS_EVENTS, lastSeq: ROWS_EVENTS });
  });

  it.each([
    // One event inside a row of three: the row is named, by its seq.
    [
      'an event inside a row edited',
      `UPDATE activity_journal SET detail = replace(detail, '"accepted"', '"denied"') WHERE seq = 1003`,
      1003,
      'edited',
    ],
    [
      'an event dropped from a row, its count and seq kept',
      `UPDATE activity_journal SET detail = json_remove(detail, '$[1]') WHERE seq = ${ROWS_EVENTS - 12}`,
      ROWS_EVENTS - 12,
      'edited',
    ],
    // Columns the row's hash does not cover must stay empty: filled in, the row was edited.
    [
      "a row's own actor column filled in",
      "UPDATE activity_journal SET actor = 'token:mallory' WHERE seq = 2003",
      2003,
      'edited',
    ],
    // Fewer events claimed: its first event is no longer there.
    [
      "a row's count of events lowered",
      'UPDATE activity_journal SET events = 2 WHERE seq = 7503',
      7501,
      'missing',
    ],
    // The row of 32769–32770 starts a range: its first event is the first missing seq.
    ['a row deleted at a range boundary', 'DELETE FROM activity_journal WHERE seq = 32770', 32769, 'missing'],
    [
      'a NUL and more appended to a row',
      `UPDATE activity_journal SET detail = detail || CAST(x'00' AS TEXT) || 'x' WHERE seq = 5003`,
      5003,
      'edited',
    ],
    [
      'only a prev_hash changed',
      'UPDATE activity_journal SET prev_hash = hash WHERE seq = 7005',
      7005,
      'reordered',
    ],
  ] as [string, string, number, string][])(
    '%s: exactly the sequential report',
    async (name, sql, seq, problem) => {
      const copy = tampered(`rows-${name.replaceAll(' ', '-')}`, sql, rowsPath);
      const parallel = await verifySqliteJournal(copy, 'activity', PARALLEL);
      expect(parallel.firstBad).toMatchObject({ seq, problem });
      expect(parallel).toEqual(await verifyJournal(sqliteJournalRows(copy)));
    },
  );

  it('old rows then rows of several events (an upgraded store) verify, on both paths', async () => {
    // The old-format journal's first 40,000 rows, then rows of five events chained onto its head.
    const mixed = tampered('mixed', 'DELETE FROM activity_journal WHERE seq > 40000');
    const db = new Database(mixed);
    let prev =
      (db.prepare('SELECT hash FROM activity_journal WHERE seq = 40000').pluck().get() as string) ?? '';
    const insert = db.prepare(
      `INSERT INTO activity_journal VALUES (${JOURNAL_COLUMNS.map(() => '?').join(', ')})`,
    );
    for (let seq = 40000; seq < 80000; seq += 5) {
      const events = Array.from({ length: 5 }, (_, i) => ({
        kind: 'received' as const,
        requestRef: `r${seq + i}`,
      }));
      const row = buildRow(events, seq, 1_764_000_000_000 + seq, prev);
      insert.run(journalRowValues(row));
      prev = row.hash;
    }
    db.close();
    const parallel = await verifySqliteJournal(mixed, 'activity', PARALLEL);
    expect(parallel).toMatchObject({ ok: true, entries: 80000, lastSeq: 80000, headHash: prev });
    expect(parallel).toEqual(await verifyJournal(sqliteJournalRows(mixed)));
  });
});
