/**
 * The journal tamper suite: a real run's store, signed and shipped off the
 * host, and the ways an attacker with write access to the data directory can
 * change it. Used by test/journal-tamper.test.ts (every case once) and
 * scripts/reliability-tamper.ts (every case, detected or missed).
 */
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import canonicalize from 'canonicalize';
import { decideApproval } from '../../src/approval/decide.js';
import { resolveContract, type ToolContract } from '../../src/contracts/contract.js';
import { OutcomeUnknownError } from '../../src/errors.js';
import { META } from '../../src/executions/answers.js';
import type { ToolCall } from '../../src/executions/call.js';
import { ExecutionEngine } from '../../src/executions/engine.js';
import { Fingerprinter } from '../../src/identity/fingerprint.js';
import { buildRow, type RowEvent } from '../../src/journal/chain.js';
import { signedHeadLine } from '../../src/journal/export.js';
import { signJournalHeads } from '../../src/journal/head-signer.js';
import { loadOrCreateSigningKey, signHead } from '../../src/journal/signing.js';
import { TRIM_JOURNALED_FIELD } from '../../src/journal/trims.js';
import type { ExecutionStore } from '../../src/store/types.js';
import { deadDispatch } from './claim-input.js';
import {
  editEvent,
  eventSeqOf,
  firstSeq,
  putRow,
  rowHolding,
  type StoredRow,
  storedRowHash,
} from './journal-rows.js';

/** What a run leaves behind, and what its operator kept off the host. */
export interface TamperFixture {
  /** The data directory: idem.db, the signing key pair, journal-head.json. */
  dataDir: string;
  /** Off the host: the public key, and every head signed (JSONL, `idem audit sign --json`). */
  offHost: { publicKey: string; heads: string };
  /** journal-head.json as it was at the first signature (a genuine, older head). */
  olderHead: string;
  ids: RunIds;
}

export interface RunIds {
  completed: string[];
  unknown: string;
  resolved: string;
  failed: string;
  denied: string;
  awaiting: string;
  /** Approved by operator:bob, not yet run. */
  approved: string;
  dead: string;
}

/**
 * A run through the real engine: completed, attached, failed, unknown,
 * operator-resolved, awaiting approval, denied and lease-expired executions,
 * and session events. `tick` advances the store's clock (when it has one we
 * control) between calls, so that finished executions are spread in time.
 */
export async function populate(
  store: ExecutionStore,
  dataDir: string,
  options: { calls: number; tick?: (ms: number) => void; halfway?: () => Promise<void> },
): Promise<RunIds> {
  const tick = options.tick ?? (() => {});
  const engine = new ExecutionEngine({
    store,
    fingerprinter: Fingerprinter.forDataDir(dataDir),
    approver: async (r) => (r.argumentsPreview.includes('deny') ? 'denied' : 'pending'),
  });
  const call = (contract: ToolContract, args: Record<string, unknown>, actor = 'token:alice'): ToolCall => ({
    tool: 'charge_card',
    channel: 'library',
    target: 'local',
    credentialRef: null,
    method: 'tools/call',
    arguments: args,
    contract: resolveContract(contract, undefined, []),
    caller: { actor, session: 's1', requestRef: `req-${Math.random()}` },
  });
  const keyed: ToolContract = { replay: 'keyed', scope: { business_key: 'order_id' } };
  const ok = async () => ({ content: [{ type: 'text' as const, text: 'charged' }] });
  // A definite answer names its execution in _meta; Idem's own answers in structuredContent.
  const refOf = (result: { structuredContent?: unknown; _meta?: Record<string, unknown> }) =>
    (result._meta?.[META.executionId] as string | undefined) ??
    (result.structuredContent as { idem: { ref: string } }).idem.ref;
  const completed: string[] = [];
  await store.appendEvents(
    [{ kind: 'session_start', actor: 'token:alice', detail: { client: 'agent', version: '1.0' } }],
    'sessions',
  );
  for (let i = 0; i < options.calls; i++) {
    if (i === Math.floor(options.calls / 2)) await options.halfway?.();
    const result = await engine.execute(call(keyed, { order_id: `o-${i}`, amount_cents: 100 + i }), ok);
    completed.push(refOf(result));
    if (i % 10 === 0) await engine.execute(call(keyed, { order_id: `o-${i}`, amount_cents: 100 + i }), ok);
    if (i % 7 === 0) {
      await store.appendEvents(
        [{ kind: 'session_start', actor: `token:agent-${i}`, detail: { client: 'agent', version: '1.0' } }],
        'sessions',
      );
    }
    tick(1_000);
  }
  const failed = await engine.execute(call(keyed, { order_id: 'fail' }), async () => ({
    isError: true,
    content: [{ type: 'text', text: 'declined' }],
  }));
  tick(1_000);
  const lost = (order: string) =>
    engine.execute(call({ replay: 'review' }, { order_id: order }), async () => {
      throw new OutcomeUnknownError('connection reset');
    });
  const unknown = await lost('lost');
  const toResolve = await lost('resolved');
  tick(1_000);
  const awaiting = await engine.execute(call({ ...keyed, approval: 'every_call' }, { order_id: 'wait' }), ok);
  const denied = await engine.execute(call({ ...keyed, approval: 'every_call' }, { order_id: 'deny' }), ok);
  const approved = await engine.execute(
    call({ ...keyed, approval: 'every_call' }, { order_id: 'approve' }),
    ok,
  );
  await decideApproval(store, refOf(approved), 'approved', { by: 'operator:bob', via: 'cli' });
  await engine.resolve(refOf(toResolve), 'completed', 'operator:bob', 'found it in the ledger');
  tick(1_000);
  const dead = deadDispatch({ actor: 'token:carol', tool: 'deploy' });
  await store.claim(dead, {
    events: [
      { kind: 'accepted', executionId: dead.id, actor: dead.actor, tool: dead.tool },
      { kind: 'dispatched', executionId: dead.id, actor: dead.actor, tool: dead.tool },
    ],
  });
  tick(60_000);
  await store.sweep({ retentionMs: 3_600_000 * 24 * 365 });
  await store.appendEvents([{ kind: 'session_end', actor: 'token:alice', detail: {} }], 'sessions');
  return {
    completed,
    unknown: refOf(unknown),
    resolved: refOf(toResolve),
    failed: refOf(failed),
    denied: refOf(denied),
    awaiting: refOf(awaiting),
    approved: refOf(approved),
    dead: dead.id,
  };
}

/** The run on SQLite, with an injected clock, signed halfway and at the end; heads shipped off the host. */
export async function buildSqliteFixture(root: string, calls = 200): Promise<TamperFixture> {
  const { SqliteStore } = await import('../../src/store/sqlite/sqlite-store.js');
  const dataDir = join(root, 'data');
  const offHostDir = join(root, 'off-host');
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(offHostDir, { recursive: true });
  let now = 1_764_000_000_000;
  const store = await SqliteStore.open({ path: join(dataDir, 'idem.db'), clock: () => now });
  const offHost = {
    publicKey: join(offHostDir, 'journal-signing.pub'),
    heads: join(offHostDir, 'heads.jsonl'),
  };
  const olderHead = join(offHostDir, 'older-journal-head.json');
  const ship = async () => {
    const heads = await signJournalHeads(store, dataDir, now);
    writeFileSync(offHost.heads, heads.map((h) => `${signedHeadLine(h)}\n`).join(''), { flag: 'a' });
  };
  const ids = await populate(store, dataDir, {
    calls,
    tick: (ms) => {
      now += ms;
    },
    halfway: async () => {
      await ship();
      copyFileSync(join(dataDir, 'journal-head.json'), olderHead);
    },
  });
  await ship();
  await store.close();
  copyFileSync(join(dataDir, 'journal-signing.pub'), offHost.publicKey);
  return { dataDir, offHost, olderHead, ids };
}

/** The flags an operator gives `idem audit verify` (paths inside the tampered copy or off the host). */
export interface VerifyAs {
  db?: string;
  file?: string;
  publicKey?: string;
  heads?: string[];
}

export interface TamperContext {
  fixture: TamperFixture;
  /** The tampered copy of the data directory. */
  dir: string;
  /** The copy's store, its append-only triggers dropped, as an attacker with the file would. */
  db: Database.Database;
}

/** What verify must report: the first bad row (stream, seq) or the bad execution, and the problem. */
export interface Expected {
  problem: string;
  stream?: 'activity' | 'sessions';
  seq?: number;
  executionId?: string;
}

export interface TamperCase {
  name: string;
  /** Changes the copy; returns how the operator verifies it, and what must be found. */
  tamper(ctx: TamperContext): { verify?: VerifyAs; expect: Expected };
}

type Row = StoredRow;

/** What a forger who knows the algorithm computes: the hash of a raw row, by the one definition of the hash. */
const rowHash = (r: Row, prev: string) => storedRowHash(r, prev);

type Table = 'activity_journal' | 'sessions_journal';

function rows(db: Database.Database, table: Table = 'activity_journal'): Row[] {
  return db.prepare(`SELECT * FROM ${table} ORDER BY seq`).all() as Row[];
}

function lastSeq(db: Database.Database, table: Table = 'activity_journal'): number {
  return (db.prepare(`SELECT MAX(seq) AS n FROM ${table}`).get() as { n: number }).n;
}

/** Recomputes every hash from `fromSeq` on: a chain that is consistent again. */
function rehashFrom(db: Database.Database, fromSeq: number, table: Table = 'activity_journal'): void {
  const all = rows(db, table);
  let prev = [...all].reverse().find((r) => r.seq < fromSeq)?.hash ?? '0'.repeat(64);
  const put = db.prepare(`UPDATE ${table} SET prev_hash = ?, hash = ? WHERE seq = ?`);
  for (const row of all) {
    if (row.seq < fromSeq) continue;
    row.prev_hash = prev;
    row.hash = rowHash(row, prev);
    put.run(row.prev_hash, row.hash, row.seq);
    prev = row.hash;
  }
}

const FORGED_OUTCOME = JSON.stringify({ result: { content: [{ type: 'text', text: 'charged (forged)' }] } });

/** Every way of tampering tried; each must make verify fail. */
export const TAMPER_CASES: TamperCase[] = [
  {
    name: "edit a row's detail",
    tamper: ({ db, fixture }) => {
      const seq = eventSeqOf(db, fixture.ids.completed[5] as string, 'outcome');
      const row = editEvent(db, seq, (e) => {
        e.detail = { state: 'failed' };
      });
      return { expect: { problem: 'edited', stream: 'activity', seq: row.seq } };
    },
  },
  {
    name: "re-space a row's detail (same value, other bytes)",
    tamper: ({ db, fixture }) => {
      const row = rowHolding(db, eventSeqOf(db, fixture.ids.completed[9] as string, 'accepted'));
      putRow(db, { ...row, detail: JSON.stringify(JSON.parse(row.detail), null, 1) });
      return { expect: { problem: 'edited', stream: 'activity', seq: row.seq } };
    },
  },
  {
    name: "duplicate a key in a row's detail (SQLite reads the first, a JSON parser the last)",
    tamper: ({ db, fixture }) => {
      const seq = eventSeqOf(db, fixture.ids.completed[11] as string, 'accepted');
      const row = rowHolding(db, seq);
      putRow(db, { ...row, detail: row.detail.replace('"target":', '"target":"evil","target":') });
      // The accepted event's detail: the row's own, or its place in a row of several.
      const path = row.events === null ? '$.target' : `$[${seq - firstSeq(row)}][5].target`;
      const evil = db.prepare(
        `SELECT json_extract(detail, '${path}') AS t FROM activity_journal WHERE seq = ?`,
      );
      if ((evil.get(row.seq) as { t: string }).t !== 'evil')
        throw new Error('the duplicate key is not what SQLite reads');
      return { expect: { problem: 'edited', stream: 'activity', seq: row.seq } };
    },
  },
  {
    name: "edit a row's actor",
    tamper: ({ db }) => {
      const row = editEvent(db, 40, (e) => {
        e.actor = 'token:mallory';
      });
      return { expect: { problem: 'edited', stream: 'activity', seq: row.seq } };
    },
  },
  {
    name: "edit a row's time",
    tamper: ({ db }) => {
      const { seq } = rowHolding(db, 41);
      db.prepare('UPDATE activity_journal SET at = at - 86400000 WHERE seq = ?').run(seq);
      return { expect: { problem: 'edited', stream: 'activity', seq } };
    },
  },
  {
    name: "edit a row's hash",
    tamper: ({ db }) => {
      const { seq } = rowHolding(db, 42);
      db.prepare(`UPDATE activity_journal SET hash = '${'ab'.repeat(32)}' WHERE seq = ?`).run(seq);
      return { expect: { problem: 'edited', stream: 'activity', seq } };
    },
  },
  {
    name: 'delete a middle row',
    tamper: ({ db }) => {
      const row = rowHolding(db, 50);
      db.prepare('DELETE FROM activity_journal WHERE seq = ?').run(row.seq);
      // Its first event is the first seq missing.
      return { expect: { problem: 'missing', stream: 'activity', seq: firstSeq(row) } };
    },
  },
  {
    name: 'delete the last rows (truncate)',
    tamper: ({ db }) => {
      const last = lastSeq(db);
      db.prepare('DELETE FROM activity_journal WHERE seq > ?').run(last - 5);
      return { expect: { problem: 'truncated', stream: 'activity', seq: lastSeq(db) + 1 } };
    },
  },
  {
    name: 'reorder two rows',
    tamper: ({ db }) => {
      // Two neighbours from seq 60 on, swapped whole: only their order changed.
      const all = rows(db);
      // The later at least as long: its events then start at or before the earlier's, out of order.
      const i = all.findIndex(
        (r, k) => r.seq >= 60 && k + 1 < all.length && ((all[k + 1] as Row).events ?? 1) >= (r.events ?? 1),
      );
      const [a, b] = [all[i], all[i + 1]] as [Row, Row];
      putRow(db, b, 'activity_journal', a.seq);
      putRow(db, a, 'activity_journal', b.seq);
      return { expect: { problem: 'reordered', stream: 'activity', seq: a.seq } };
    },
  },
  {
    name: 'insert a forged row (hashed onto its predecessor)',
    tamper: ({ db }) => {
      const all = rows(db);
      const before = rowHolding(db, 69);
      for (const row of [...all].reverse()) {
        if (row.seq <= before.seq) break;
        db.prepare('UPDATE activity_journal SET seq = seq + 1 WHERE seq = ?').run(row.seq);
      }
      const next = before.seq + 2;
      const forgedEvent = {
        kind: 'operator_resolution' as const,
        executionId:
          before.events === null
            ? before.execution_id
            : ((JSON.parse(before.detail) as RowEvent[])[0]?.[1] ?? null),
        actor: 'operator:mallory',
        detail: { as: 'failed', by: 'operator:mallory', note: 'never happened' },
      };
      const forged = buildRow([forgedEvent], before.seq, before.at, before.hash);
      db.prepare(
        `INSERT INTO activity_journal (seq, at, kind, detail, prev_hash, hash, events) VALUES (?, ?, '', ?, ?, ?, ?)`,
      ).run(forged.seq, forged.at, forged.eventsText, forged.prevHash, forged.hash, forged.events);
      // The row after it still names its real predecessor.
      const after = db
        .prepare('SELECT seq FROM activity_journal WHERE seq >= ? ORDER BY seq LIMIT 1')
        .get(next) as Row;
      return { expect: { problem: 'reordered', stream: 'activity', seq: after.seq } };
    },
  },
  {
    name: 'edit a row, then re-hash the whole chain',
    tamper: ({ db }) => {
      editEvent(db, 10, (e) => {
        e.actor = 'token:mallory';
      });
      rehashFrom(db, 1);
      // The signed head (at the last seq) no longer matches: the first signed seq that differs.
      return { expect: { problem: 'rehashed', stream: 'activity', seq: lastSeq(db) } };
    },
  },
  {
    name: 'delete journal-head.json, then truncate',
    tamper: ({ db, dir, fixture }) => {
      rmSync(join(dir, 'journal-head.json'));
      db.prepare('DELETE FROM activity_journal WHERE seq > ?').run(lastSeq(db) - 5);
      return {
        verify: { db: join(dir, 'idem.db'), publicKey: fixture.offHost.publicKey },
        expect: { problem: 'unsigned', stream: 'activity' },
      };
    },
  },
  {
    name: 'delete journal-head.json, then edit and re-hash',
    tamper: ({ db, dir, fixture }) => {
      rmSync(join(dir, 'journal-head.json'));
      const row = editEvent(db, 10, (e) => {
        e.actor = 'token:mallory';
      });
      rehashFrom(db, firstSeq(row));
      return {
        verify: { db: join(dir, 'idem.db'), publicKey: fixture.offHost.publicKey },
        expect: { problem: 'unsigned', stream: 'activity' },
      };
    },
  },
  {
    name: 'drop the signed heads from an export, then re-hash',
    tamper: ({ dir, fixture }) => {
      const exported = exportOf(join(dir, 'idem.db'));
      const lines = exported.filter((l) => l.type !== 'signed_head');
      // The line of the row that holds event 10: its actor, or that event's inside the row's events.
      const holds10 = (l: ExportedLine) =>
        l.type === 'entry' &&
        l.stream === 'activity' &&
        (l.seq as number) >= 10 &&
        (l.seq as number) - ((l.events as number) ?? 1) < 10;
      const edited = lines.map((l) => {
        if (!holds10(l)) return l;
        if (l.events === undefined) return { ...l, actor: 'token:mallory' };
        const events = structuredClone(l.detail) as RowEvent[];
        (events[10 - ((l.seq as number) - (l.events as number) + 1)] as RowEvent)[2] = 'token:mallory';
        return { ...l, detail: events };
      });
      rehashExport(edited);
      const file = join(dir, 'export.jsonl');
      writeFileSync(file, edited.map((l) => `${JSON.stringify(l)}\n`).join(''));
      return {
        verify: { file, publicKey: fixture.offHost.publicKey },
        expect: { problem: 'unsigned', stream: 'activity' },
      };
    },
  },
  {
    name: 'restore an older genuine signed head after truncation',
    tamper: ({ db, dir, fixture }) => {
      const older = JSON.parse(readFileSync(fixture.olderHead, 'utf8')) as { heads: { seq: number }[] };
      const olderSeq = Math.max(...older.heads.map((h) => h.seq));
      const last = lastSeq(db);
      db.prepare('DELETE FROM activity_journal WHERE seq > ?').run(olderSeq + 3);
      const kept = lastSeq(db);
      copyFileSync(fixture.olderHead, join(dir, 'journal-head.json'));
      return {
        verify: {
          db: join(dir, 'idem.db'),
          publicKey: fixture.offHost.publicKey,
          heads: [fixture.offHost.heads],
        },
        expect: { problem: 'truncated', stream: 'activity', seq: Math.min(kept + 1, last) },
      };
    },
  },
  {
    name: 're-hash, then re-sign with a key of the attacker',
    tamper: ({ db, dir, fixture }) => {
      editEvent(db, 10, (e) => {
        e.actor = 'token:mallory';
      });
      rehashFrom(db, 1);
      mkdirSync(join(dir, 'attacker'));
      const attacker = loadOrCreateSigningKey(join(dir, 'attacker'));
      const heads = ['activity_journal', 'sessions_journal'].map((table) => {
        const last = db.prepare(`SELECT seq, hash FROM ${table} ORDER BY seq DESC LIMIT 1`).get() as Row;
        return signHead(
          {
            stream: table === 'activity_journal' ? 'activity' : 'sessions',
            seq: last.seq,
            hash: last.hash,
            signedAt: 1_800_000_000_000,
          },
          attacker.privateKeyPem,
        );
      });
      writeFileSync(join(dir, 'journal-head.json'), JSON.stringify({ heads }));
      writeFileSync(join(dir, 'journal-signing.pub'), attacker.publicKeyPem);
      return {
        verify: { db: join(dir, 'idem.db'), publicKey: fixture.offHost.publicKey },
        expect: { problem: 'bad_signature', stream: 'activity' },
      };
    },
  },
  {
    name: "forge an execution's state (unknown → completed)",
    tamper: ({ db, fixture }) => {
      db.prepare("UPDATE executions SET state = 'completed' WHERE id = ?").run(fixture.ids.unknown);
      return { expect: { problem: 'state_mismatch', executionId: fixture.ids.unknown } };
    },
  },
  {
    name: 'forge an unknown into completed with a fake result',
    tamper: ({ db, fixture }) => {
      db.prepare("UPDATE executions SET state = 'completed', outcome = ? WHERE id = ?").run(
        FORGED_OUTCOME,
        fixture.ids.unknown,
      );
      return { expect: { problem: 'state_mismatch', executionId: fixture.ids.unknown } };
    },
  },
  {
    name: "forge a completed execution's result",
    tamper: ({ db, fixture }) => {
      const id = fixture.ids.completed[20] as string;
      db.prepare('UPDATE executions SET outcome = ? WHERE id = ?').run(FORGED_OUTCOME, id);
      return { expect: { problem: 'outcome_mismatch', executionId: id } };
    },
  },
  {
    name: "forge an operator-resolved execution's result",
    tamper: ({ db, fixture }) => {
      db.prepare('UPDATE executions SET outcome = ? WHERE id = ?').run(FORGED_OUTCOME, fixture.ids.resolved);
      return { expect: { problem: 'outcome_mismatch', executionId: fixture.ids.resolved } };
    },
  },
  {
    name: 'delete an unknown execution row',
    tamper: ({ db, fixture }) => {
      db.prepare('DELETE FROM executions WHERE id = ?').run(fixture.ids.dead);
      return { expect: { problem: 'execution_missing', executionId: fixture.ids.dead } };
    },
  },
  {
    name: 'delete a completed execution row (not the oldest)',
    tamper: ({ db, fixture }) => {
      const id = fixture.ids.completed[30] as string;
      db.prepare('DELETE FROM executions WHERE id = ?').run(id);
      return { expect: { problem: 'execution_missing', executionId: id } };
    },
  },
  {
    // Inside its retention, and the first a trim would remove: only a journaled trim tells them apart.
    name: 'delete the oldest completed execution row (inside its retention, as a trim would remove it)',
    tamper: ({ db, fixture }) => {
      const id = fixture.ids.completed[0] as string;
      db.prepare('DELETE FROM executions WHERE id = ?').run(id);
      return { expect: { problem: 'execution_missing', executionId: id } };
    },
  },
  {
    name: "change an execution's actor",
    tamper: ({ db, fixture }) => {
      const id = fixture.ids.completed[7] as string;
      db.prepare("UPDATE executions SET actor = 'token:mallory' WHERE id = ?").run(id);
      return { expect: { problem: 'actor_mismatch', executionId: id } };
    },
  },
  {
    name: "change an execution's tool",
    tamper: ({ db, fixture }) => {
      const id = fixture.ids.completed[8] as string;
      db.prepare("UPDATE executions SET tool = 'refund_card' WHERE id = ?").run(id);
      return { expect: { problem: 'tool_mismatch', executionId: id } };
    },
  },
  {
    name: "replace an unknown execution's fingerprint (a retry would no longer find it, and dispatch again)",
    tamper: ({ db, fixture }) => {
      db.prepare('UPDATE executions SET fingerprint = randomblob(32) WHERE id = ?').run(fixture.ids.unknown);
      return { expect: { problem: 'fingerprint_mismatch', executionId: fixture.ids.unknown } };
    },
  },
  {
    name: "forge an approval's decider (decided_by)",
    tamper: ({ db, fixture }) => {
      db.prepare("UPDATE approval_requests SET decided_by = 'operator:mallory' WHERE execution_id = ?").run(
        fixture.ids.approved,
      );
      return { expect: { problem: 'approval_mismatch', executionId: fixture.ids.approved } };
    },
  },
  {
    name: 'erase an approval decision (the approved execution shows as pending)',
    tamper: ({ db, fixture }) => {
      db.prepare(
        'UPDATE approval_requests SET decision = NULL, decided_by = NULL, decided_via = NULL, decided_at = NULL, reason = NULL WHERE execution_id = ?',
      ).run(fixture.ids.approved);
      return { expect: { problem: 'approval_mismatch', executionId: fixture.ids.approved } };
    },
  },
  {
    name: 'insert an execution the journal never saw',
    tamper: ({ db, fixture }) => {
      const id = 'exe_01KFORGED0000000000000000';
      const source = db
        .prepare('SELECT * FROM executions WHERE id = ?')
        .get(fixture.ids.completed[3]) as Record<string, unknown>;
      const columns = Object.keys(source);
      db.prepare(
        `INSERT INTO executions (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
      ).run({ ...source, id, active: 0 });
      return { expect: { problem: 'unjournaled', executionId: id } };
    },
  },
  {
    name: 'edit the sessions stream',
    tamper: ({ db }) => {
      const row = editEvent(
        db,
        3,
        (e) => {
          e.actor = 'token:mallory';
        },
        'sessions_journal',
      );
      return { expect: { problem: 'edited', stream: 'sessions', seq: row.seq } };
    },
  },
  {
    name: 'truncate the sessions stream',
    tamper: ({ db }) => {
      const last = lastSeq(db, 'sessions_journal');
      db.prepare('DELETE FROM sessions_journal WHERE seq > ?').run(last - 2);
      return {
        expect: { problem: 'truncated', stream: 'sessions', seq: lastSeq(db, 'sessions_journal') + 1 },
      };
    },
  },
];

/** A fresh copy of the fixture's data directory, opened for tampering. */
export function tamperedCopy(fixture: TamperFixture, into: string): TamperContext & { close(): void } {
  cpSync(fixture.dataDir, into, { recursive: true });
  const db = new Database(join(into, 'idem.db'));
  db.exec(`
    DROP TRIGGER IF EXISTS activity_journal_no_update; DROP TRIGGER IF EXISTS activity_journal_no_delete;
    DROP TRIGGER IF EXISTS sessions_journal_no_update; DROP TRIGGER IF EXISTS sessions_journal_no_delete;`);
  return { fixture, dir: into, db, close: () => db.close() };
}

type ExportedLine = { type: string; stream?: string; seq?: number; [key: string]: unknown };

/** The store's journals as `idem audit export` writes them (heads first, then entries), as objects. */
function exportOf(dbPath: string): ExportedLine[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    const heads = JSON.parse(readFileSync(join(dbPath, '..', 'journal-head.json'), 'utf8')) as {
      heads: Record<string, unknown>[];
    };
    const lines: ExportedLine[] = heads.heads.map((h) => ({ type: 'signed_head', ...h }));
    for (const stream of ['activity', 'sessions'] as const) {
      for (const r of rows(db, `${stream}_journal`)) {
        lines.push({
          type: 'entry',
          stream,
          seq: r.seq,
          at: r.at,
          kind: r.kind,
          executionId: r.execution_id,
          actor: r.actor,
          tool: r.tool,
          requestRef: r.request_ref,
          prevHash: r.prev_hash,
          hash: r.hash,
          ...(r.events === null ? {} : { events: r.events }),
          detail: JSON.parse(r.detail),
        });
      }
    }
    return lines;
  } finally {
    db.close();
  }
}

/** Recomputes the hashes of an export's entries, stream by stream. */
function rehashExport(lines: ExportedLine[]): void {
  const prev: Record<string, string> = {};
  for (const line of lines) {
    if (line.type !== 'entry') continue;
    const stream = line.stream as string;
    const p = prev[stream] ?? '0'.repeat(64);
    const row: Row = {
      seq: line.seq as number,
      at: line.at as number,
      kind: line.kind as string,
      execution_id: line.executionId as string | null,
      actor: line.actor as string | null,
      tool: line.tool as string | null,
      request_ref: line.requestRef as string | null,
      detail: (line.events === undefined ? JSON.stringify(line.detail) : canonicalize(line.detail)) as string,
      prev_hash: p,
      hash: '',
      events: (line.events as number | undefined) ?? null,
    };
    line.prevHash = p;
    line.hash = rowHash(row, p);
    prev[stream] = line.hash as string;
  }
}

/**
 * Makes the copy's activity journal what a version before outcome digests
 * wrote: the digests dropped from every detail, the chain hashed again.
 */
export function asJournalBeforeDigests(db: Database.Database): void {
  rewriteDetails(db, (_kind, detail) => {
    if (!('outcomeSha256' in detail)) return undefined;
    const { outcomeSha256: _digest, ...rest } = detail;
    return rest;
  });
}

/**
 * Makes the copy's activity journal what a version before trims were
 * journaled wrote: no claim carries the mark (journal/trims.ts), the chain
 * hashed again.
 */
export function asJournalBeforeTrimMarks(db: Database.Database): void {
  rewriteDetails(db, (kind, detail) => {
    if (kind !== 'accepted' || !(TRIM_JOURNALED_FIELD in detail)) return undefined;
    const { [TRIM_JOURNALED_FIELD]: _mark, ...rest } = detail;
    return rest;
  });
}

/** Rewrites events' details (`change` returns the new one, or undefined to keep it), in either format, then re-hashes. */
function rewriteDetails(
  db: Database.Database,
  change: (kind: string, detail: Record<string, unknown>) => Record<string, unknown> | undefined,
): void {
  const put = db.prepare('UPDATE activity_journal SET detail = ? WHERE seq = ?');
  for (const row of rows(db)) {
    if (row.events === null) {
      const detail = change(row.kind, JSON.parse(row.detail) as Record<string, unknown>);
      if (detail) put.run(canonicalize(detail), row.seq);
      continue;
    }
    const events = JSON.parse(row.detail) as RowEvent[];
    let changed = false;
    for (const event of events) {
      const detail = change(event[0], event[5] as Record<string, unknown>);
      if (detail) [event[5], changed] = [detail, true];
    }
    if (changed) put.run(canonicalize(events), row.seq);
  }
  rehashFrom(db, 1);
}

export { type Row, rowHash };
