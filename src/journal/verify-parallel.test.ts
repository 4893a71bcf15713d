import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildJournalFile } from '../../bench/journal.js';
import { sqliteJournalRows } from './sources.js';
import { verifyJournal } from './verify.js';
import { verifySqliteJournal } from './verify-parallel.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-verify-parallel-'));
// Four chunks of 16,384 rowids, with workers started below their usual threshold: every range
// case (first, last, a boundary) on a file that builds in seconds.
const N = 65_536;
const PARALLEL = { workers: 2, parallelFrom: 0 };
let path: string;
beforeAll(async () => {
  path = await buildJournalFile(dir, N);
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tampered(name: string, sql: string): string {
  const copy = join(dir, `${name}.db`);
  copyFileSync(path, copy);
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
      `INSERT INTO activity_journal SELECT ${rowid}, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash
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
