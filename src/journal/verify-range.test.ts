import { hash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { buildEntry, GENESIS_HASH } from './chain.js';
import { sqliteJournalRows } from './sources.js';
import { verifyJournal } from './verify.js';
import { verifySqliteJournal } from './verify-parallel.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-verify-range-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const COLUMNS = 'seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash';
/** What SQLite spells for a row, unguarded: the text a forger hashes to fool a fast path that trusts it. */
const SQLITE_SPELLING = `concat(prev_hash, char(10), json_array(seq, at, kind, execution_id, actor, tool, request_ref), char(10), detail)`;

/**
 * A journal of two honest rows and a third whose `column` holds `value` (an
 * SQL literal) — a type or size a store never writes, as an edit of the
 * file's bytes leaves it (the table has no declared types, so it takes
 * them). Its hash is forged over SQLite's own spelling of the row, and
 * `after` (SQL) may edit it once hashed.
 */
function journalWith(name: string, column: string, value: string, after = ''): string {
  const path = join(dir, `${name}.db`);
  const db = new Database(path);
  db.exec(`CREATE TABLE activity_journal (${COLUMNS})`);
  const insert = db.prepare(`INSERT INTO activity_journal (${COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)`);
  let prev = GENESIS_HASH;
  for (let seq = 1; seq <= 3; seq++) {
    const { entry, detailText } = buildEntry(
      {
        kind: 'accepted',
        executionId: 'exe_1',
        actor: 'token:a',
        tool: 'charge_card',
        requestRef: 'r',
        detail: {},
      },
      seq,
      1_764_000_000_000 + seq,
      prev,
    );
    const { executionId, requestRef, prevHash, hash: entryHash } = entry;
    // BigInt: a number is bound as a real, and this table keeps what it is given.
    insert.run(
      BigInt(seq),
      BigInt(entry.at),
      entry.kind,
      executionId,
      entry.actor,
      entry.tool,
      requestRef,
      detailText,
      prevHash,
      entryHash,
    );
    prev = entry.hash;
  }
  db.exec(`UPDATE activity_journal SET ${column} = ${value} WHERE rowid = 3`);
  const spelled = db
    .prepare(`SELECT ${SQLITE_SPELLING} FROM activity_journal WHERE rowid = 3`)
    .pluck()
    .get() as string;
  db.prepare('UPDATE activity_journal SET hash = ? WHERE rowid = 3').run(hash('sha256', spelled, 'hex'));
  if (after) db.exec(after);
  db.close();
  return path;
}

describe('the fast path (SQL_HASHED_ROW and the reader) confirms only what the exact scan confirms', () => {
  const nonAscii64 = `'${'a'.repeat(62)}é'`;
  it.each([
    // A real is spelled `5.0` by SQLite, `5` by JSON.stringify: SQLite lets it through, the reader refuses it.
    ['a real seq', 'seq', '3.0'],
    ['a real at', 'at', '1764000000003.0'],
    ['a real at with a fraction', 'at', '1.5'],
    ['a real at beyond 2^53', 'at', '1e20'],
    ['an at beyond 2^53', 'at', '9007199254740993'],
    ['an at as text', 'at', `'1764000000003'`],
    ['a real in a text column', 'execution_id', '5.0'],
    ['an integer beyond 2^53 in a text column', 'actor', '9007199254740993'],
    ['a real beyond 2^53 in a text column', 'request_ref', '1e20'],
    // A blob that is JSONB: json_array spells it as the JSON it encodes.
    ['a JSONB blob kind', 'kind', `jsonb('"accepted"')`],
    ['a JSONB blob tool', 'tool', `jsonb('5')`],
    ['a JSONB blob at', 'at', `jsonb('1764000000003')`],
    ['a real detail', 'detail', '5.0'],
    ['a NULL detail', 'detail', 'NULL'],
    ['a blob detail', 'detail', `CAST('{}' AS BLOB)`],
    // concat() joins the text as || does: bytes after a NUL, and invalid UTF-8, are hashed as the exact scan reads them.
    ['a NUL inside the detail', 'detail', `'{}' || CAST(x'00' AS TEXT) || 'x'`],
    ['invalid UTF-8 in the detail', 'detail', `CAST(x'7b7dff' AS TEXT)`],
    ['a blob prev_hash', 'prev_hash', 'CAST(prev_hash AS BLOB)'],
    ['a 64-byte prev_hash of 63 characters', 'prev_hash', nonAscii64],
    ['a prev_hash of 65 characters', 'prev_hash', `prev_hash || '0'`],
  ])('%s', async (name, column, value) => {
    const path = journalWith(name.replaceAll(' ', '-'), column, value);
    const fast = await verifySqliteJournal(path, 'activity', { workers: 1 });
    expect(fast).toEqual(await verifyJournal(sqliteJournalRows(path)));
  });

  it.each([
    ['a blob hash', 'CAST(hash AS BLOB)'],
    ['a 64-byte hash of 63 characters', `substr(hash, 1, 62) || 'é'`],
    ['a hash of 65 characters', `hash || '0'`],
  ])('%s', async (name, value) => {
    const path = journalWith(
      name.replaceAll(' ', '-'),
      'kind',
      'kind',
      `UPDATE activity_journal SET hash = ${value} WHERE rowid = 3`,
    );
    const fast = await verifySqliteJournal(path, 'activity', { workers: 1 });
    expect(fast).toMatchObject({ ok: false, firstBad: { seq: 3 } });
    expect(fast).toEqual(await verifyJournal(sqliteJournalRows(path)));
  });

  it('forged over SQLite spelling where JSON.stringify spells otherwise: both say edited', async () => {
    for (const [column, value] of [
      ['at', '1764000000003.0'],
      ['kind', `jsonb('"accepted"')`],
      ['detail', 'NULL'],
    ] as const) {
      const path = journalWith(`forged-${column}`, column, value);
      expect(await verifySqliteJournal(path, 'activity', { workers: 1 })).toMatchObject({
        ok: false,
        firstBad: { seq: 3, problem: 'edited' },
      });
    }
  });
});
