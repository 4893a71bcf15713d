import { createPrivateKey, hash } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  buildEntry,
  buildRow,
  chainGenesis,
  chainHash,
  entryBody,
  envelopeTail,
  GENESIS_HASH,
  journalEntryHash,
  journalRowHash,
  rowBody,
  rowEntries,
  rowEventsText,
  SQL_ENTRY_BODY,
  SQL_HASHED_ROW,
  SQL_HASHED_ROWS,
} from './chain.js';
import type { ActivityEventInput } from './events.js';
import { outcomeDigest } from './outcome-digest.js';
import { signedHeadMessage, signHead, verifySignedHead } from './signing.js';
import { hashMatches, verifyJournal } from './verify.js';
import type { StoredJournalRow } from './verify-report.js';

/*
 * Known answers. Stored journals are verified by recomputing these hashes, and
 * stored executions are found again by their digests: a change to what is
 * hashed (a field added, moved or re-encoded) must fail here, not silently
 * break every journal already on disk. The expected values are literals,
 * computed once by the code as it shipped and cross-checked with a plain
 * SHA-256 outside Idem (`python3 -c 'import hashlib; ...'` over the spelled-out
 * bytes below) — do not regenerate them to make a change pass.
 */

const AT = 1_764_547_200_000;
const FP = 'fp_3K_V4DJVkomoiO0JwAo9xZURLrL-89xJ7Wf-Nv_J0pk';
const OUTCOME = { content: [{ type: 'text', text: 'charged 10 EUR' }], isError: false };
const OUTCOME_SHA256 = '6efc859aee42620d0337033f0a24dc09ef4c52de930d27d5a6342e47bcec8d4e';

interface Vector {
  name: string;
  event: ActivityEventInput;
  seq: number;
  at: number;
  prevHash: string;
  /** The canonical detail text a store keeps. */
  detailText: string;
  /** Everything the hash covers after prev_hash, spelled out. */
  body: string;
  hash: string;
}

const RECEIVED: Vector = {
  name: 'first activity entry (genesis prev_hash): received, with a request ref',
  event: {
    kind: 'received',
    executionId: 'ex_01',
    actor: 'user:alice',
    tool: 'charge_card',
    requestRef: '["user:alice","s:S1","7"]',
    detail: { state: 'received', fingerprint: FP },
  },
  seq: 1,
  at: AT,
  prevHash: GENESIS_HASH,
  detailText: `{"fingerprint":"${FP}","state":"received"}`,
  body: `[1,1764547200000,"received","ex_01","user:alice","charge_card","[\\"user:alice\\",\\"s:S1\\",\\"7\\"]"]\n{"fingerprint":"${FP}","state":"received"}`,
  hash: 'f2ac36c54efc32931ec69def7c34152f57b7b4c59f981d4cb0b124f6f5b4018e',
};

const OUTCOME_ENTRY: Vector = {
  name: 'outcome chained onto it, binding the stored result by detail.outcomeSha256',
  event: {
    kind: 'outcome',
    executionId: 'ex_01',
    actor: 'user:alice',
    tool: 'charge_card',
    detail: { state: 'completed', outcomeSha256: OUTCOME_SHA256 },
  },
  seq: 2,
  at: AT + 250,
  prevHash: RECEIVED.hash,
  detailText: `{"outcomeSha256":"${OUTCOME_SHA256}","state":"completed"}`,
  body: `[2,1764547200250,"outcome","ex_01","user:alice","charge_card",null]\n{"outcomeSha256":"${OUTCOME_SHA256}","state":"completed"}`,
  hash: 'cd8ab59ffe665a9aa8885dcdcb2bf17e8893b880a01e2346ef9b93880f2ce8e1',
};

const UNICODE: Vector = {
  name: 'nulls in the envelope; detail with non-ASCII, U+2028, 1.5 and -0 (RFC 8785 forms)',
  event: { kind: 'received', detail: { note: 'é😀\u2028', n: 1.5, z: -0 } },
  seq: 3,
  at: AT + 1_000,
  prevHash: OUTCOME_ENTRY.hash,
  detailText: '{"n":1.5,"note":"é😀\u2028","z":0}',
  body: '[3,1764547201000,"received",null,null,null,null]\n{"n":1.5,"note":"é😀\u2028","z":0}',
  hash: '9a32148ce7e1a5efdd9439269336f3b63e1fe3934d3d3275cb03051fc770f5e1',
};

const SESSION_START: Vector = {
  name: 'first sessions-stream entry: session_start',
  event: {
    kind: 'session_start',
    actor: 'user:alice',
    detail: {
      client: { name: 'claude-code', version: '1.2.3' },
      protocolVersion: '2025-06-18',
      session: 'S1',
    },
  },
  seq: 1,
  at: AT - 1_000,
  prevHash: GENESIS_HASH,
  detailText:
    '{"client":{"name":"claude-code","version":"1.2.3"},"protocolVersion":"2025-06-18","session":"S1"}',
  body: '[1,1764547199000,"session_start",null,"user:alice",null,null]\n{"client":{"name":"claude-code","version":"1.2.3"},"protocolVersion":"2025-06-18","session":"S1"}',
  hash: 'df2d2b2190c870bf90f80184f1f934b4d99dcdaed5f3cd55dee2da905fcc5885',
};

/** chainGenesis('activity', 1), spelled out: SHA-256 of "idem-journal-chain/v1\nactivity\n1". */
const CHAIN_1_GENESIS = 'cea0bc80cb1134a4cbda5de2fb4de3deba1ea54a53eef4465eeaff5d48b93fe3';

const WRITER_FIRST: Vector = {
  name: "first entry of a writer's chain (PostgreSQL chain 1): prev_hash is the chain's genesis, seq from the stream's sequence",
  event: { kind: 'accepted', executionId: 'ex_02', actor: 'user:bob', tool: 'charge_card' },
  seq: 41,
  at: AT,
  prevHash: CHAIN_1_GENESIS,
  detailText: '{}',
  body: '[41,1764547200000,"accepted","ex_02","user:bob","charge_card",null]\n{}',
  hash: '293f77e612335de1ca5ebf7461d7e787a188644edd1c450137e3bd53e2d6536c',
};

const ACTIVITY = [RECEIVED, OUTCOME_ENTRY, UNICODE];
const VECTORS = [...ACTIVITY, SESSION_START, WRITER_FIRST];

/** The row a store keeps for a vector: detail as its canonical text. */
function storedRow(v: Vector): StoredJournalRow {
  const { entry, detailText } = buildEntry(v.event, v.seq, v.at, v.prevHash);
  const { detail: _detail, ...envelope } = entry;
  return { ...envelope, detailText };
}

describe('journal entry hash: known answers', () => {
  it('the genesis prev_hash is 64 zeros', () => {
    expect(GENESIS_HASH).toBe('0000000000000000000000000000000000000000000000000000000000000000');
  });

  it("a chain's genesis: chain 0 is the all-zero one; any other binds its stream and id", () => {
    expect(chainGenesis('activity', 0)).toBe(GENESIS_HASH);
    expect(chainGenesis('activity', 1)).toBe(CHAIN_1_GENESIS);
    expect(chainGenesis('sessions', 1)).toBe(
      '934ccd1f27ce4374df5986b66faf634def6fc04591adc2113cd0b578382d8933',
    );
    expect(chainGenesis('activity', 7)).toBe(
      'fdfc639e11d12efff9024163987aa67d6451c45d66f5389c1a841ece75b0e270',
    );
  });

  it('the outcome digest an outcome entry carries', () => {
    expect(outcomeDigest(OUTCOME)).toBe(OUTCOME_SHA256);
    // The same outcome in another key order is the same stored result.
    expect(outcomeDigest({ isError: false, content: [{ text: 'charged 10 EUR', type: 'text' }] })).toBe(
      OUTCOME_SHA256,
    );
  });

  for (const v of VECTORS) {
    describe(v.name, () => {
      it('stores build it with the expected detail text and hash', () => {
        const { entry, detailText } = buildEntry(v.event, v.seq, v.at, v.prevHash);
        expect(detailText).toBe(v.detailText);
        expect(entry.prevHash).toBe(v.prevHash);
        expect(entry.hash).toBe(v.hash);
        expect(entryBody(entry)).toBe(v.body);
        expect(chainHash(v.prevHash, entryBody(entry))).toBe(v.hash);
      });

      it("the envelope tail PostgreSQL's journal_append completes is the body's envelope after [seq,at,", () => {
        const envelope = v.body.slice(0, v.body.indexOf('\n'));
        expect(`[${v.seq},${v.at},${envelopeTail(v.event)}`).toBe(envelope);
      });

      it('journalEntryHash over the stored row gives the same hash', () => {
        const row = storedRow(v);
        expect(journalEntryHash(row.prevHash, row, row.detailText)).toBe(v.hash);
      });

      it('a plain SHA-256 over the spelled-out bytes agrees (deliberately independent of chain.ts)', () => {
        expect(hash('sha256', `${v.prevHash}\n${v.body}`, 'hex')).toBe(v.hash);
      });

      it('the verifier accepts the stored row as written (canonical), and nothing else', () => {
        const row = storedRow(v);
        expect(hashMatches(row)).toBe(true);
        // Another spelling of the same value is an edit: the stored bytes are what the hash covers.
        const respaced = JSON.stringify(JSON.parse(row.detailText), null, 2);
        expect(hashMatches({ ...row, detailText: respaced })).toBe(respaced === row.detailText);
        expect(hashMatches({ ...row, detailText: `${row.detailText} ` })).toBe(false);
        expect(hashMatches({ ...row, actor: 'user:mallory' })).toBe(false);
        expect(hashMatches({ ...row, at: row.at + 1 })).toBe(false);
        expect(hashMatches({ ...row, prevHash: 'f'.repeat(64) })).toBe(false);
        expect(hashMatches({ ...row, detailText: '{"state":"failed"}' })).toBe(false);
        expect(hashMatches({ ...row, detailText: 'not json' })).toBe(false);
      });
    });
  }
});

/*
 * Rows of the one-row-per-transaction format (docs/adr/0052): known answers,
 * cross-checked the same way (python3 hashlib over the spelled-out bytes). The
 * first row chains onto the old-format vectors above, as in a store upgraded
 * past migration 9: an old row's hash is the new row's prev_hash.
 */
interface RowVector {
  name: string;
  events: ActivityEventInput[];
  /** The seq of the row's last event. */
  seq: number;
  at: number;
  prevHash: string;
  /** The RFC 8785 text of the events, as the store keeps it. */
  eventsText: string;
  /** Everything the hash covers after prev_hash, spelled out. */
  body: string;
  hash: string;
}

const ROW_CLAIM: RowVector = {
  name: "a claim's row of three events (4–6), chained onto an old-format row",
  events: [
    {
      kind: 'received',
      executionId: 'ex_03',
      actor: 'user:alice',
      tool: 'charge_card',
      requestRef: '["user:alice","s:S1","8"]',
      detail: { state: 'received', fingerprint: FP },
    },
    { kind: 'accepted', executionId: 'ex_03', actor: 'user:alice', tool: 'charge_card' },
    { kind: 'dispatched', executionId: 'ex_03', detail: { channel: 'mcp', attempt: 1 } },
  ],
  seq: 6,
  at: AT + 2_000,
  prevHash: UNICODE.hash,
  eventsText: `[["received","ex_03","user:alice","charge_card","[\\"user:alice\\",\\"s:S1\\",\\"8\\"]",{"fingerprint":"${FP}","state":"received"}],["accepted","ex_03","user:alice","charge_card",null,{}],["dispatched","ex_03",null,null,null,{"attempt":1,"channel":"mcp"}]]`,
  body: `idem-journal-row/v2\n[6,1764547202000,3]\n[["received","ex_03","user:alice","charge_card","[\\"user:alice\\",\\"s:S1\\",\\"8\\"]",{"fingerprint":"${FP}","state":"received"}],["accepted","ex_03","user:alice","charge_card",null,{}],["dispatched","ex_03",null,null,null,{"attempt":1,"channel":"mcp"}]]`,
  hash: '5a3a7c9eec7af107407dd2c385f6eaf3302752e393f9ecd08eed5587295e6514',
};

const ROW_OUTCOME: RowVector = {
  name: "the outcome's row of two events (7–8)",
  events: [
    { kind: 'outcome', executionId: 'ex_03', detail: { state: 'completed', outcomeSha256: OUTCOME_SHA256 } },
    { kind: 'delivered', executionId: 'ex_03' },
  ],
  seq: 8,
  at: AT + 2_250,
  prevHash: ROW_CLAIM.hash,
  eventsText: `[["outcome","ex_03",null,null,null,{"outcomeSha256":"${OUTCOME_SHA256}","state":"completed"}],["delivered","ex_03",null,null,null,{}]]`,
  body: `idem-journal-row/v2\n[8,1764547202250,2]\n[["outcome","ex_03",null,null,null,{"outcomeSha256":"${OUTCOME_SHA256}","state":"completed"}],["delivered","ex_03",null,null,null,{}]]`,
  hash: '220c33f456ee02539a538f2eca4e4a6022e1642f027272a7f97105101334553d',
};

const ROW_ONE: RowVector = {
  name: 'a row of one event (9): a NUL and a quote in the envelope, RFC 8785 forms in the detail',
  events: [{ kind: 'id_reused', requestRef: 'r\u0000"x', detail: { note: 'é😀\u2028', n: 1.5, z: -0 } }],
  seq: 9,
  at: AT + 3_000,
  prevHash: ROW_OUTCOME.hash,
  eventsText: '[["id_reused",null,null,null,"r\\u0000\\"x",{"n":1.5,"note":"é😀\u2028","z":0}]]',
  body: 'idem-journal-row/v2\n[9,1764547203000,1]\n[["id_reused",null,null,null,"r\\u0000\\"x",{"n":1.5,"note":"é😀\u2028","z":0}]]',
  hash: 'e67d050e3f8ae9f598406fc9dbf71f81035f6758cbc7c2ec0f14c07c7c3f367e',
};

const ROW_SESSIONS: RowVector = {
  name: 'the first row of a sessions stream (genesis prev_hash): start and end',
  events: [
    {
      kind: 'session_start',
      actor: 'user:alice',
      requestRef: 'ses_1',
      detail: { protocolVersion: '2026-07-28' },
    },
    { kind: 'session_end', actor: 'user:alice', requestRef: 'ses_1' },
  ],
  seq: 2,
  at: AT,
  prevHash: GENESIS_HASH,
  eventsText:
    '[["session_start",null,"user:alice",null,"ses_1",{"protocolVersion":"2026-07-28"}],["session_end",null,"user:alice",null,"ses_1",{}]]',
  body: 'idem-journal-row/v2\n[2,1764547200000,2]\n[["session_start",null,"user:alice",null,"ses_1",{"protocolVersion":"2026-07-28"}],["session_end",null,"user:alice",null,"ses_1",{}]]',
  hash: '8d872235d783a4bee5185f027ce0de013b1c6c482ecea7d81514e709c487242b',
};

const ROW_VECTORS = [ROW_CLAIM, ROW_OUTCOME, ROW_ONE, ROW_SESSIONS];

/** The row a store keeps for a row vector: the events' text in detail, their count in events. */
function storedRowOf(v: RowVector): StoredJournalRow {
  return {
    seq: v.seq,
    at: v.at,
    kind: '',
    executionId: null,
    actor: null,
    tool: null,
    requestRef: null,
    detailText: v.eventsText,
    prevHash: v.prevHash,
    hash: v.hash,
    events: v.events.length,
  };
}

describe('journal row hash (one row per transaction): known answers', () => {
  for (const v of ROW_VECTORS) {
    describe(v.name, () => {
      it('stores build it with the expected events text, body and hash', () => {
        const row = buildRow(v.events, v.seq - v.events.length, v.at, v.prevHash);
        const entries = rowEntries(row);
        expect(row).toEqual({
          seq: v.seq,
          at: v.at,
          events: v.events.length,
          eventsText: v.eventsText,
          prevHash: v.prevHash,
          hash: v.hash,
        });
        expect(rowEventsText(v.events)).toBe(v.eventsText);
        expect(rowBody(v.seq, v.at, v.events.length, v.eventsText)).toBe(v.body);
        expect(journalRowHash(v.prevHash, v.seq, v.at, v.events.length, v.eventsText)).toBe(v.hash);
        // Each event keeps its own seq; the row's is its last event's.
        expect(entries.map((e) => e.seq)).toEqual(v.events.map((_, i) => v.seq - v.events.length + 1 + i));
        expect(entries.map((e) => [e.kind, e.hash, e.prevHash, e.rowEvents])).toEqual(
          v.events.map((e) => [e.kind, v.hash, v.prevHash, v.events.length]),
        );
      });

      it('a plain SHA-256 over the spelled-out bytes agrees (deliberately independent of chain.ts)', () => {
        expect(hash('sha256', `${v.prevHash}\n${v.body}`, 'hex')).toBe(v.hash);
      });

      it('the verifier accepts the stored row as written, and any change to an event, its count or place', () => {
        const row = storedRowOf(v);
        expect(hashMatches(row)).toBe(true);
        const events = JSON.parse(row.detailText) as unknown[][];
        const edit = (change: (e: unknown[][]) => void) => {
          const copy = structuredClone(events);
          change(copy);
          return JSON.stringify(copy);
        };
        expect(hashMatches({ ...row, detailText: edit((e) => (e[0]![2] = 'user:mallory')) })).toBe(false);
        expect(hashMatches({ ...row, detailText: edit((e) => (e.at(-1)![0] = 'denied')) })).toBe(false);
        expect(hashMatches({ ...row, detailText: edit((e) => e.reverse()) })).toBe(v.events.length === 1);
        expect(hashMatches({ ...row, detailText: edit((e) => e.pop()) })).toBe(false);
        expect(hashMatches({ ...row, detailText: `${row.detailText} ` })).toBe(false);
        expect(hashMatches({ ...row, events: v.events.length + 1 })).toBe(false);
        expect(hashMatches({ ...row, seq: row.seq + 1 })).toBe(false);
        expect(hashMatches({ ...row, at: row.at + 1 })).toBe(false);
        expect(hashMatches({ ...row, prevHash: 'f'.repeat(64) })).toBe(false);
        // Read as a row of the old format (no count), the same columns never match.
        const { events: _events, ...old } = row;
        expect(hashMatches(old)).toBe(false);
      });
    });
  }

  it('a journal of old-format rows, then rows of several events (an upgraded store), verifies; an edit inside a row is named at its seq', async () => {
    const rows = [...ACTIVITY.map(storedRow), ...[ROW_CLAIM, ROW_OUTCOME, ROW_ONE].map(storedRowOf)];
    expect(await verifyJournal(rows)).toEqual({ ok: true, entries: 9, lastSeq: 9, headHash: ROW_ONE.hash });
    const edited = rows.map((r) =>
      r.seq === 6 ? { ...r, detailText: r.detailText.replace('"accepted"', '"denied"') } : r,
    );
    expect((await verifyJournal(edited)).firstBad).toEqual({
      seq: 6,
      problem: 'edited',
      message: 'seq 6 (the row of events 4–6): content does not match its hash',
    });
    // A row deleted: its first event is the first seq missing.
    expect((await verifyJournal(rows.filter((r) => r.seq !== 6))).firstBad).toMatchObject({
      seq: 4,
      problem: 'missing',
    });
  });

  it('SQL_HASHED_ROWS spells a stored row as its hash, then exactly the bytes its hash covers', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE j (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, kind TEXT NOT NULL, execution_id TEXT,
      actor TEXT, tool TEXT, request_ref TEXT, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
      events INTEGER) STRICT`);
    const insert = db.prepare('INSERT INTO j VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    for (const v of ROW_VECTORS.slice(0, 3))
      insert.run(v.seq, v.at, '', null, null, null, null, v.eventsText, v.prevHash, v.hash, v.events.length);
    const old = storedRow(RECEIVED);
    insert.run(
      1,
      old.at,
      old.kind,
      old.executionId,
      old.actor,
      old.tool,
      old.requestRef,
      old.detailText,
      old.prevHash,
      old.hash,
      null,
    );
    const texts = db.prepare(`SELECT ${SQL_HASHED_ROWS} FROM j ORDER BY seq`).pluck().all() as string[];
    db.close();
    expect(texts).toEqual([
      `${RECEIVED.hash}${RECEIVED.prevHash}\n${RECEIVED.body}`,
      ...ROW_VECTORS.slice(0, 3).map((v) => `${v.hash}${v.prevHash}\n${v.body}`),
    ]);
  });
});

describe('signed head: known answers', () => {
  // A fixed Ed25519 key (seed 1..32). Ed25519 signatures are deterministic, so the signature is a constant too.
  const seed = Buffer.from(Array.from({ length: 32 }, (_, i) => i + 1));
  const privateKeyPem = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
    format: 'der',
    type: 'pkcs8',
  }).export({ type: 'pkcs8', format: 'pem' }) as string;
  const publicKeyPem =
    '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=\n-----END PUBLIC KEY-----\n';
  const head = { stream: 'activity' as const, seq: 2, hash: OUTCOME_ENTRY.hash, signedAt: AT + 100_000 };
  const signature =
    'bmKQh7dI9vDgaokQay50V14bkhXPGOm0wwDhPAtf6euJRl5gp6fOFrFsF3C5W9pUjw4hDz/4Kz5+XhKOPdWZCQ==';

  it('signs exactly these bytes', () => {
    expect(signedHeadMessage(head).toString('utf8')).toBe(
      `idem-journal-head/v1\nactivity\n2\n${OUTCOME_ENTRY.hash}\n1764547300000`,
    );
  });

  it('gives this signature, which verifies with the public key', () => {
    expect(signHead(head, privateKeyPem).signature).toBe(signature);
    expect(verifySignedHead({ ...head, signature }, publicKeyPem)).toBe(true);
    expect(verifySignedHead({ ...head, seq: 3, signature }, publicKeyPem)).toBe(false);
  });

  it("a writer's chain's head names its chain (v2), so it cannot be moved to another chain", () => {
    const chainHead = { ...head, chain: 1, seq: 41, hash: WRITER_FIRST.hash };
    expect(signedHeadMessage(chainHead).toString('utf8')).toBe(
      `idem-journal-head/v2\nactivity\n1\n41\n${WRITER_FIRST.hash}\n1764547300000`,
    );
    const signed = signHead(chainHead, privateKeyPem);
    expect(verifySignedHead(signed, publicKeyPem)).toBe(true);
    expect(verifySignedHead({ ...signed, chain: 2 }, publicKeyPem)).toBe(false);
    const { chain: _chain, ...asChain0 } = signed;
    expect(verifySignedHead(asChain0, publicKeyPem)).toBe(false);
  });

  it('a journal of the vectors, with that signed head, verifies', async () => {
    const rows = ACTIVITY.slice(0, 2).map(storedRow);
    const report = await verifyJournal(rows, { signedHead: { ...head, signature }, publicKeyPem });
    expect(report).toMatchObject({ ok: true, entries: 2, lastSeq: 2, headHash: OUTCOME_ENTRY.hash });
    const all = await verifyJournal(ACTIVITY.map(storedRow));
    expect(all).toMatchObject({ ok: true, entries: 3, headHash: UNICODE.hash });
  });
});

describe('SQL_ENTRY_BODY: the hashed text, spelled by SQLite', () => {
  const hostile = [
    'plain',
    '',
    'quote " and backslash \\ and slash /',
    '\\"\\\\"',
    'controls \u0000 \u0001 \b \t \n \u000b \f \r \u001b \u001f end',
    'DEL \u007f, U+2028 \u2028 U+2029 \u2029',
    'non-ASCII: é 中文 😀 \ufffd',
    'lone surrogates \ud800 x \udfff',
    '["token:agent-7","s:3f2b9c1e","7"]',
  ];
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE j (seq INTEGER PRIMARY KEY, at INTEGER, kind TEXT, execution_id TEXT, actor TEXT,
           tool TEXT, request_ref TEXT, detail TEXT, prev_hash TEXT, hash TEXT)`);
  const insert = db.prepare('INSERT INTO j VALUES (?,?,?,?,?,?,?,?,?,?)');
  const insertRaw = (seq: number, at: string, columns: string) =>
    db.exec(`INSERT INTO j VALUES (${seq}, ${at}, ${columns}, 'p', 'h')`);
  const rows = () =>
    db
      .prepare(
        `SELECT seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, ${SQL_ENTRY_BODY} FROM j ORDER BY seq`,
      )
      .raw(true)
      .all() as [
      number,
      number,
      string,
      string | null,
      string | null,
      string | null,
      string | null,
      string,
      string,
      string | null,
    ][];

  it('is byte-for-byte the text journalEntryHash hashes, for hostile strings in every column', () => {
    let seq = 0;
    for (const s of hostile) {
      for (const column of [2, 3, 4, 5, 6, 7, 8]) {
        const values: (string | number | null)[] = [
          ++seq,
          AT + seq,
          'received',
          'ex_1',
          null,
          'tool',
          'ref',
          '{}',
          'prev',
        ];
        values[column] = s;
        insert.run(...values, 'h');
      }
    }
    // Bytes JavaScript never writes: invalid UTF-8, an encoded surrogate, and a NUL inside a text.
    for (const bytes of ['ff', 'c3', 'eda080', 'e2', '61006200', 'f09f98']) {
      const text = `CAST(x'22${bytes}5c' AS TEXT)`;
      insertRaw(++seq, '-5', `${text}, ${text}, NULL, NULL, ${text}, ${text}`);
    }
    insertRaw(++seq, '9007199254740991', `'k', NULL, NULL, NULL, NULL, CAST(x'7b7d0078' AS TEXT)`);
    let checked = 0;
    for (const r of rows()) {
      const [seqValue, at, kind, executionId, actor, tool, requestRef, detailText, prevHash, body] = r;
      const envelope = { seq: seqValue, at, kind, executionId, actor, tool, requestRef };
      expect(body).not.toBeNull();
      expect(hash('sha256', body as string, 'hex')).toBe(journalEntryHash(prevHash, envelope, detailText));
      expect(body).toBe(`${prevHash}\n${JSON.stringify(Object.values(envelope))}\n${detailText}`);
      checked++;
    }
    expect(checked).toBe(hostile.length * 7 + 7);
  });

  it('is NULL for a row it cannot spell exactly (a blob, a real, an integer beyond 2^53), so the verifier takes the exact path', () => {
    db.exec('DELETE FROM j');
    insertRaw(1, '1.5', `'k', NULL, NULL, NULL, NULL, '{}'`);
    insertRaw(2, '9007199254740993', `'k', NULL, NULL, NULL, NULL, '{}'`);
    insertRaw(3, '1', `x'6b', NULL, NULL, NULL, NULL, '{}'`);
    insertRaw(4, '1', `'k', NULL, NULL, NULL, NULL, x'7b7d'`);
    insertRaw(5, '1', `'k', x'6b', NULL, NULL, NULL, '{}'`);
    db.exec(`INSERT INTO j VALUES (6, 1, 'k', NULL, NULL, NULL, NULL, '{}', NULL, 'h')`);
    expect(rows().map((r) => r[9])).toEqual([null, null, null, null, null, null]);
  });

  it('SQL_HASHED_ROW is the hash then that text, and NULL unless hash and prev_hash are 64-byte texts (the reader checks the rest: verify-range.test.ts)', () => {
    db.exec('DELETE FROM j');
    const h = 'a'.repeat(64);
    const p = 'b'.repeat(64);
    insert.run(1, AT, 'received', 'ex_1', null, 'tool', 'ref', '{}', p, h);
    insert.run(2, AT, 'received', 'ex_1', null, 'tool', 'ref', '{}', `${p}\nx`, h);
    insert.run(3, AT, 'received', 'ex_1', null, 'tool', 'ref', '{}', p, `${h}0`);
    insert.run(4, AT, 'received', 'ex_1', null, 'tool', 'ref', '{}', p, Buffer.from(h));
    insert.run(5, AT, 'received', 'ex_1', null, 'tool', 'ref', '{}', Buffer.from(p), h);
    insert.run(6, AT, Buffer.from('received'), 'ex_1', null, 'tool', 'ref', '{}', p, h);
    insert.run(7, AT, 'received', 'ex_1', null, 'tool', Buffer.from('ref'), '{}', p, h);
    insert.run(8, AT, 'received', 'ex_1', null, 'tool', 'ref', null, p, h);
    insert.run(9, 2 ** 60, 'received', 'ex_1', null, 'tool', 'ref', '{}', p, h);
    const texts = db
      .prepare(`SELECT ${SQL_HASHED_ROW}, ${SQL_ENTRY_BODY} FROM j ORDER BY seq`)
      .raw(true)
      .all() as [string | null, string | null][];
    expect(texts[0]).toEqual([
      `${h}${texts[0]?.[1]}`,
      `${p}\n[1,${AT},"received","ex_1",null,"tool","ref"]\n{}`,
    ]);
    expect(texts.slice(1).map((t) => t[0])).toEqual(Array(8).fill(null));
  });
});
