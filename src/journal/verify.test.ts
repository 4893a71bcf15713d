import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDir } from '../../test/support/temp-dirs.js';
import type { JsonValue } from '../identity/canonical.js';
import { chainGenesis, GENESIS_HASH, journalEntryHash, nextEntry } from './chain.js';
import type { ActivityEventInput } from './events.js';
import { entryLine, readExport, signedHeadLine } from './export.js';
import { loadOrCreateSigningKey, type SignedHead, signHead } from './signing.js';
import { verifyJournal } from './verify.js';
import type { StoredJournalRow } from './verify-report.js';

const dir = freshDir('verify');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keys = loadOrCreateSigningKey(dir);
const otherKeys = loadOrCreateSigningKey(freshDir('verify-other'));

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

  it('detail stored in a non-canonical but equal form is an edit: the hash covers the stored bytes', async () => {
    const rows = clone(original);
    const row = rows[0] as StoredJournalRow;
    row.detailText = ` ${row.detailText}`;
    expect((await verifyJournal(rows)).firstBad).toMatchObject({ seq: row.seq, problem: 'edited' });
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

/**
 * A PostgreSQL journal since schema v4: chain 0 from before (seq 1..legacy),
 * then three writers' chains, interleaved, their seqs from one sequence with
 * gaps (a rolled-back append takes a seq too).
 */
function writersJournal(legacy: number, perChain: number): StoredJournalRow[] {
  const rows = journal(legacy);
  const heads = new Map([1, 2, 3].map((c) => [c, chainGenesis('activity', c)]));
  let seq = legacy;
  for (let i = 0; i < perChain * 3; i++) {
    const chain = (i % 3) + 1;
    seq += i % 7 === 6 ? 2 : 1;
    const entry = nextEntry(
      { kind: KINDS[i % 5] as ActivityEventInput['kind'], executionId: `exe_w${i}`, detail: { n: i } },
      seq,
      1_764_000_100_000 + i,
      heads.get(chain) as string,
    );
    heads.set(chain, entry.hash);
    rows.push({ ...entry, chain, detailText: canonicalize(entry.detail) as string });
  }
  return rows;
}

describe("verifyJournal on writers' chains (PostgreSQL)", () => {
  const original = writersJournal(50, 300);
  const lastOf = (rows: StoredJournalRow[], chain: number) =>
    rows.filter((r) => (r.chain ?? 0) === chain).at(-1) as StoredJournalRow;
  const registryOf = (rows: StoredJournalRow[]) =>
    [0, 1, 2, 3].map((chain) => ({ chain, seq: lastOf(rows, chain).seq, hash: lastOf(rows, chain).hash }));
  const registry = registryOf(original);
  const signedHeads = registry.map((r) =>
    signHead(
      { stream: 'activity', ...(r.chain ? { chain: r.chain } : {}), seq: r.seq, hash: r.hash, signedAt: 1 },
      keys.privateKeyPem,
    ),
  );
  const full = { registry, signedHeads, publicKeyPem: keys.publicKeyPem, requireSignedHead: true };
  const ofChain = (rows: StoredJournalRow[], chain: number) => rows.filter((r) => (r.chain ?? 0) === chain);

  it('verifies: chain 0 and every chain, each against its registered and signed head', async () => {
    const report = await verifyJournal(original, full);
    expect(report).toMatchObject({ ok: true, entries: 950, lastSeq: lastOf(original, 3).seq });
    expect(report.chains?.map((c) => [c.chain, c.entries])).toEqual([
      [0, 50],
      [1, 300],
      [2, 300],
      [3, 300],
    ]);
  });

  for (const chain of [0, 2]) {
    describe(`chain ${chain}`, () => {
      const rows = ofChain(original, chain);
      const middle = rows[Math.floor(rows.length / 2)] as StoredJournalRow;
      const at = (all: StoredJournalRow[], seq: number) => all.findIndex((r) => r.seq === seq);

      it('a row edited → edited, at its seq', async () => {
        const all = clone(original);
        (all[at(all, middle.seq)] as StoredJournalRow).tool = 'refund';
        expect((await verifyJournal(all, full)).firstBad).toMatchObject({
          seq: middle.seq,
          problem: 'edited',
        });
      });

      it('a row deleted → missing', async () => {
        const all = clone(original);
        all.splice(at(all, middle.seq), 1);
        const { firstBad } = await verifyJournal(all, full);
        expect(firstBad?.problem).toBe('missing');
        // Named at the deleted seq (chain 0) or at the row whose predecessor is gone (a writer's chain).
        const next = rows[rows.indexOf(middle) + 1] as StoredJournalRow;
        expect(firstBad?.seq).toBe(chain === 0 ? middle.seq : next.seq);
      });

      it('a row moved later → reordered', async () => {
        const all = clone(original);
        const [moved] = all.splice(at(all, middle.seq), 1);
        const next = rows[rows.indexOf(middle) + 1] as StoredJournalRow;
        all.splice(at(all, next.seq) + 1, 0, moved as StoredJournalRow);
        expect((await verifyJournal(all, full)).firstBad).toMatchObject({ problem: 'reordered' });
      });

      it("the chain's tail cut off → truncated, by the registry alone and by the signed heads alone", async () => {
        const cut = new Set(rows.slice(-5).map((r) => r.seq));
        const all = original.filter((r) => !cut.has(r.seq));
        const expected = { problem: 'truncated', seq: (rows.at(-6) as StoredJournalRow).seq + 1 };
        expect((await verifyJournal(all)).ok).toBe(true);
        expect((await verifyJournal(all, { registry })).firstBad).toMatchObject(expected);
        expect(
          (await verifyJournal(all, { signedHeads, publicKeyPem: keys.publicKeyPem })).firstBad,
        ).toMatchObject(expected);
      });
    });
  }

  it("a whole writer's chain deleted → truncated, by its registered head, or (registry row gone too) its signed head", async () => {
    const all = original.filter((r) => r.chain !== 2);
    const byRegistry = await verifyJournal(all, { registry });
    expect(byRegistry.firstBad).toMatchObject({ chain: 2, problem: 'truncated', seq: 1 });
    const withoutRow = registry.filter((r) => r.chain !== 2);
    expect((await verifyJournal(all, { registry: withoutRow })).ok).toBe(true);
    const bySignature = await verifyJournal(all, { ...full, registry: withoutRow });
    expect(bySignature.firstBad).toMatchObject({ chain: 2, problem: 'truncated' });
  });

  it("a chain's rows relabelled as another chain → no longer link (the chain is in the genesis)", async () => {
    const all = original.filter((r) => r.chain !== 3).map((r) => (r.chain === 2 ? { ...r, chain: 3 } : r));
    expect((await verifyJournal(all)).firstBad).toMatchObject({ chain: 3, problem: 'missing' });
  });

  it('a signed head moved to another chain → bad_signature (v2 heads name their chain)', async () => {
    const moved = signedHeads.map((h) => (h.chain === 1 ? { ...h, chain: 2 } : h));
    const report = await verifyJournal(original, { signedHeads: moved, publicKeyPem: keys.publicKeyPem });
    expect(report.firstBad).toMatchObject({ problem: 'bad_signature' });
  });

  it('a chain started after the last signing needs no head of its own; a stream without any head does', async () => {
    const heads = signedHeads.filter((h) => h.chain !== 3);
    expect((await verifyJournal(original, { ...full, signedHeads: heads })).ok).toBe(true);
    const none = await verifyJournal(original, { ...full, signedHeads: [] });
    expect(none.firstBad).toMatchObject({ problem: 'unsigned' });
  });

  it('rows of another stream do not verify here: the stream is in the genesis', async () => {
    expect((await verifyJournal(original, { stream: 'sessions' })).firstBad).toMatchObject({
      problem: 'missing',
    });
  });
});
