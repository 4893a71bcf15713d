import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../identity/canonical.js';
import { GENESIS_HASH, journalEntryHash, nextEntry } from './chain.js';
import type { ActivityEventInput } from './events.js';
import { entryLine, readExport, signedHeadLine } from './export.js';
import { loadOrCreateSigningKey, type SignedHead, signHead } from './signing.js';
import { type StoredJournalRow, verifyJournal } from './verify.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-verify-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keys = loadOrCreateSigningKey(dir);
const otherKeys = loadOrCreateSigningKey(mkdtempSync(join(tmpdir(), 'idem-verify-other-')));

const KINDS: ActivityEventInput['kind'][] = ['received', 'accepted', 'dispatched', 'outcome', 'delivered'];

/** A journal of `n` entries as a store writes it: detail stored as canonical text. */
function journal(n: number): StoredJournalRow[] {
  const rows: StoredJournalRow[] = [];
  let prev = GENESIS_HASH;
  for (let seq = 1; seq <= n; seq++) {
    const exe = `exe_${String(Math.floor((seq - 1) / 5)).padStart(26, '0')}`;
    const kind = KINDS[(seq - 1) % 5] as ActivityEventInput['kind'];
    const detail: Record<string, JsonValue> =
      kind === 'outcome'
        ? { state: 'completed' }
        : kind === 'received'
          ? { preview: `{"order_id":"o-${seq}"}` }
          : {};
    const entry = nextEntry(
      {
        kind,
        executionId: exe,
        actor: 'token:alice',
        tool: 'charge_card',
        requestRef: `["a","s:1","${seq}"]`,
        detail,
      },
      seq,
      1_764_000_000_000 + seq,
      prev,
    );
    rows.push({ ...entry, detailText: canonicalize(entry.detail) as string });
    prev = entry.hash;
  }
  return rows;
}

const N = 12_000;
const MIDDLE = 6_000;
const sign = (rows: StoredJournalRow[], key = keys.privateKeyPem): SignedHead => {
  const last = rows.at(-1) as StoredJournalRow;
  return signHead({ stream: 'activity', seq: last.seq, hash: last.hash, signedAt: 1_764_100_000_000 }, key);
};
const clone = (rows: StoredJournalRow[]) => rows.map((r) => ({ ...r }));

describe('verifyJournal on a journal of 12 000 entries', () => {
  const original = journal(N);
  const head = sign(original);

  it('the untouched journal verifies, with its signed head', async () => {
    const report = await verifyJournal(original, { signedHead: head, publicKeyPem: keys.publicKeyPem });
    expect(report).toMatchObject({
      ok: true,
      entries: N,
      lastSeq: N,
      signedHead: { seq: N, verified: true },
    });
  });

  it('one field of a middle entry edited → edited, at that seq', async () => {
    const rows = clone(original);
    (rows[MIDDLE - 1] as StoredJournalRow).actor = 'token:mallory';
    const report = await verifyJournal(rows, { signedHead: head, publicKeyPem: keys.publicKeyPem });
    expect(report.firstBad).toMatchObject({ seq: MIDDLE, problem: 'edited' });
    const detail = clone(original);
    (detail[MIDDLE] as StoredJournalRow).detailText = '{"state":"failed"}';
    expect((await verifyJournal(detail)).firstBad).toMatchObject({ seq: MIDDLE + 1 });
  });

  it('one entry deleted → missing, naming the deleted seq', async () => {
    const rows = clone(original);
    rows.splice(MIDDLE - 1, 1);
    expect((await verifyJournal(rows)).firstBad).toMatchObject({ seq: MIDDLE, problem: 'missing' });
  });

  it('two entries swapped → reordered, naming the first of them', async () => {
    const rows = clone(original);
    [rows[MIDDLE - 1], rows[MIDDLE]] = [
      rows[MIDDLE] as StoredJournalRow,
      rows[MIDDLE - 1] as StoredJournalRow,
    ];
    expect((await verifyJournal(rows)).firstBad).toMatchObject({ seq: MIDDLE, problem: 'reordered' });
  });

  it('the tail truncated → caught only by the signed head: truncated, after the last remaining seq', async () => {
    const rows = original.slice(0, N - 100);
    expect((await verifyJournal(rows)).ok).toBe(true);
    const report = await verifyJournal(rows, { signedHead: head, publicKeyPem: keys.publicKeyPem });
    expect(report.firstBad).toMatchObject({ seq: N - 99, problem: 'truncated' });
  });

  it('the tail edited and re-hashed → a valid chain, caught by the signed head at its seq', async () => {
    const rows = clone(original);
    let prev = (rows[N - 51] as StoredJournalRow).hash;
    for (let i = N - 50; i < N; i++) {
      const row = rows[i] as StoredJournalRow;
      if (i === N - 50) row.actor = 'token:mallory';
      row.prevHash = prev;
      // Re-hashed the way an attacker with the algorithm would: with the one definition of the hash.
      row.hash = journalEntryHash(prev, row, row.detailText);
      prev = row.hash;
    }
    expect((await verifyJournal(rows)).ok).toBe(true);
    const report = await verifyJournal(rows, { signedHead: head, publicKeyPem: keys.publicKeyPem });
    expect(report.firstBad).toMatchObject({ seq: N, problem: 'rehashed' });
  });

  it('a signed head forged with another key → bad_signature', async () => {
    const forged = sign(original, otherKeys.privateKeyPem);
    const report = await verifyJournal(original, { signedHead: forged, publicKeyPem: keys.publicKeyPem });
    expect(report.firstBad).toMatchObject({ problem: 'bad_signature' });
  });

  it('detail stored in a non-canonical but equal form still verifies (slow path)', async () => {
    const rows = clone(original);
    const row = rows[0] as StoredJournalRow;
    row.detailText = JSON.stringify(JSON.parse(row.detailText), null, 2);
    expect((await verifyJournal(rows)).ok).toBe(true);
  });
});

describe('JSONL export', () => {
  it('round-trips: the export verifies, and an edited line is found', async () => {
    const rows = journal(2_000);
    const head = sign(rows);
    const path = join(dir, 'export.jsonl');
    writeFileSync(
      path,
      `${[signedHeadLine(head), ...rows.map((r) => entryLine('activity', r))].join('\n')}\n`,
    );
    const good = await readExport(path);
    expect(good.heads).toEqual([head]);
    const report = await verifyJournal(good.rows, {
      signedHead: good.heads[0] as SignedHead,
      publicKeyPem: keys.publicKeyPem,
    });
    expect(report).toMatchObject({ ok: true, entries: 2_000 });

    const lines = readFileSync(path, 'utf8').split('\n');
    lines[1000] = (lines[1000] as string).replace('"token:alice"', '"token:mallory"');
    writeFileSync(path, lines.join('\n'));
    const bad = await readExport(path);
    expect((await verifyJournal(bad.rows)).firstBad).toMatchObject({ seq: 1000, problem: 'edited' });
  });
});
