import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveContract, type ToolContract } from '../src/contracts/contract.js';
import { OutcomeUnknownError } from '../src/errors.js';
import type { ToolCall } from '../src/executions/call.js';
import { ExecutionEngine } from '../src/executions/engine.js';
import { GatewayConfigSchema } from '../src/gateway/config/index.js';
import { Gateway } from '../src/gateway/gateway.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { rebuildStates } from '../src/journal/rebuild.js';
import { readSignedHeads, verifySignedHead } from '../src/journal/signing.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { deadDispatch } from './support/claim-input.js';
import {
  editEvent,
  firstSeq,
  putRow,
  rowHolding,
  type StoredRow,
  storedRowHash,
} from './support/journal-rows.js';
import { runIdem } from './support/run-cli.js';
import { PATIENTLY } from './support/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-audit-'));
const db = join(dir, 'idem.db');
const SECRET = 'sk_live_51Hxyz_never_log_me';
const CARD = '4000002760003184';

const idem = (...args: string[]) => runIdem(args, { dataDir: dir });

/** A copy of the store file, for one tamper case; the journal's append-only triggers dropped, as an attacker with the file would. */
function tamperedCopy(name: string, tamper: (db: Database.Database) => void): string {
  const path = join(dir, `${name}.db`);
  copyFileSync(db, path);
  const handle = new Database(path);
  handle.exec('DROP TRIGGER activity_journal_no_update; DROP TRIGGER activity_journal_no_delete;');
  tamper(handle);
  handle.close();
  return path;
}

let total = 0;
let states: Map<string, string>;

beforeAll(async () => {
  // The store's clock runs with the host's, ahead by `skew`: the test moves it past a lease instead of waiting.
  let skew = 0;
  const store = await SqliteStore.open({ path: db, clock: () => Date.now() + skew });
  const engine = new ExecutionEngine({
    store,
    fingerprinter: Fingerprinter.forDataDir(dir),
    approver: async (r) => (r.argumentsPreview.includes('deny') ? 'denied' : 'pending'),
  });
  const call = (contract: ToolContract, args: Record<string, unknown>, actor = 'token:alice'): ToolCall => ({
    tool: 'charge_card',
    channel: 'library',
    target: 'local',
    credentialRef: null,
    method: 'tools/call',
    arguments: args,
    contract: resolveContract(contract, undefined, ['card_number']),
    caller: { actor, session: 's1', requestRef: `req-${Math.random()}` },
  });
  const keyed: ToolContract = {
    replay: 'keyed',
    scope: { business_key: 'order_id' },
    fingerprint: { secrets: ['api_key'] },
  };
  const ok = async () => ({ content: [{ type: 'text' as const, text: 'charged' }] });
  // Enough calls for a journal of well over 10 000 entries, with every kind of outcome in it.
  for (let i = 0; i < 2_200; i++) {
    const args = { order_id: `o-${i}`, amount_cents: 100 + i, card_number: CARD, api_key: SECRET };
    await engine.execute(call(keyed, args), ok);
    if (i % 10 === 0) await engine.execute(call(keyed, args), ok); // a retry attaches
  }
  await engine.execute(call(keyed, { order_id: 'fail', card_number: CARD, api_key: SECRET }), async () => ({
    isError: true,
    content: [{ type: 'text', text: 'declined' }],
  }));
  const unknown = await engine.execute(
    call({ replay: 'review' }, { order_id: 'lost', card_number: CARD, api_key: SECRET }),
    async () => {
      throw new OutcomeUnknownError('connection reset');
    },
  );
  await engine.execute(
    call({ ...keyed, approval: 'every_call' }, { order_id: 'wait', card_number: CARD, api_key: SECRET }),
    ok,
  );
  await engine.execute(
    call({ ...keyed, approval: 'every_call' }, { order_id: 'deny', card_number: CARD, api_key: SECRET }),
    ok,
  );
  // The target took the call, then answered a JSON-RPC error: unknown, the error kept — and journaled with its digest.
  await engine.execute(
    call({ replay: 'review' }, { order_id: 'acted-then-failed', card_number: CARD, api_key: SECRET }),
    async () => {
      throw new OutcomeUnknownError('upstream answered with JSON-RPC error -32603: receipt not written', {
        code: -32603,
        message: 'charged, then the receipt could not be written',
      });
    },
  );
  const resolvedRef = (unknown.structuredContent as { idem: { ref: string } }).idem.ref;
  await engine.resolve(resolvedRef, 'completed', 'operator:bob', 'found it in the ledger');
  // A dispatch whose process died: the sweeper turns it unknown.
  await store.claim(deadDispatch({ id: 'exe_dead', actor: 'token:carol', tool: 'deploy' }), {
    events: [
      { kind: 'accepted', executionId: 'exe_dead' },
      { kind: 'dispatched', executionId: 'exe_dead' },
    ],
  });
  skew += 1_000;
  await store.sweep({ retentionMs: 3_600_000 });
  total = (await store.readJournal(0, 1_000_000)).length;
  states = new Map((await store.list({ limit: 100_000 })).map((r) => [r.id, r.state]));
  await store.close();
  const signed = await idem('audit', 'sign', '--db', db);
  expect(signed.code).toBe(0);
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the activity journal of a real run', () => {
  it('is long enough to matter, and the untouched journal verifies with its signed head', async () => {
    expect(total).toBeGreaterThanOrEqual(10_000);
    const result = await idem(
      'audit',
      'verify',
      '--db',
      db,
      '--public-key',
      join(dir, 'journal-signing.pub'),
    );
    expect(result.stdout).toContain(`OK: ${total} activity entries`);
    expect(result.stdout).toContain('verified');
    // Every stream and the executions table, without asking.
    expect(result.stdout).toMatch(/OK: \d+ sessions entries/);
    expect(result.stdout).toMatch(/OK: \d+ executions match the journal/);
    expect(result.code).toBe(0);
  });

  it("rebuilding every execution from the journal alone gives exactly the store's states", async () => {
    const store = await SqliteStore.open({ path: db });
    const rebuilt = rebuildStates(await store.readJournal(0, 1_000_000));
    await store.close();
    expect(new Set(states.values())).toEqual(
      new Set(['completed', 'failed', 'awaiting_approval', 'denied', 'unknown']),
    );
    expect(Object.fromEntries(rebuilt)).toEqual(Object.fromEntries(states));
  });

  it('secret values and raw arguments appear nowhere in the store file, the journal or its export', async () => {
    const exported = await idem('audit', 'export', '--db', db);
    expect(exported.code).toBe(0);
    for (const text of [exported.stdout, readFileSync(db).toString('latin1')]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(CARD);
    }
    // One line per journal row (a row carries its transaction's events), and more besides.
    const handle = new Database(db, { readonly: true });
    const rows = handle.prepare('SELECT count(*) FROM activity_journal').pluck().get() as number;
    handle.close();
    expect(exported.stdout.split('\n').filter(Boolean).length).toBeGreaterThan(rows);
  });
});

describe('idem audit verify names the first bad seq (exit 1)', () => {
  const middle = 5_000;
  /** The seq the case's tamper leaves to be named (a row's, or the first event gone). */
  let named = 0;
  const lastSeqOf = (h: Database.Database) =>
    h.prepare('SELECT max(seq) FROM activity_journal').pluck().get() as number;
  const cases: [string, (db: Database.Database) => void, number | (() => number), string][] = [
    [
      'edit one field of a middle entry',
      (h) => {
        named = editEvent(h, middle, (e) => {
          e.actor = 'token:mallory';
        }).seq;
      },
      () => named,
      'edited',
    ],
    [
      'delete one entry',
      (h) => {
        const row = rowHolding(h, middle);
        h.prepare('DELETE FROM activity_journal WHERE seq = ?').run(row.seq);
        named = firstSeq(row);
      },
      () => named,
      'missing',
    ],
    [
      'swap two entries',
      (h) => {
        // Neighbours from the middle on, swapped whole.
        const all = h
          .prepare('SELECT * FROM activity_journal WHERE seq >= ? ORDER BY seq LIMIT 50')
          .all(middle) as StoredRow[];
        // The later at least as long: its events then start at or before the earlier's, out of order.
        const i = all.findIndex(
          (r, k) => k + 1 < all.length && ((all[k + 1] as StoredRow).events ?? 1) >= (r.events ?? 1),
        );
        const [a, b] = [all[i], all[i + 1]] as [StoredRow, StoredRow];
        putRow(h, b, 'activity_journal', a.seq);
        putRow(h, a, 'activity_journal', b.seq);
        named = a.seq;
      },
      () => named,
      'reordered',
    ],
    [
      'truncate the tail',
      (h) => {
        h.prepare('DELETE FROM activity_journal WHERE seq > ?').run(total - 100);
        named = lastSeqOf(h) + 1;
      },
      () => named,
      'truncated',
    ],
    [
      'edit and re-hash the tail',
      (h) => {
        const rows = h
          .prepare('SELECT * FROM activity_journal WHERE seq >= ? ORDER BY seq')
          .all(total - 50) as StoredRow[];
        let prev = h
          .prepare('SELECT hash FROM activity_journal WHERE seq < ? ORDER BY seq DESC LIMIT 1')
          .pluck()
          .get((rows[0] as StoredRow).seq) as string;
        const first = editEvent(h, (rows[0] as StoredRow).seq, (e) => {
          e.actor = 'token:mallory';
        });
        rows[0] = first;
        for (const row of rows) {
          row.prev_hash = prev;
          row.hash = storedRowHash(row, prev);
          putRow(h, row);
          prev = row.hash;
        }
      },
      () => total,
      'rehashed',
    ],
  ];
  for (const [name, tamper, seq, problem] of cases) {
    it(name, async () => {
      const path = tamperedCopy(name.replaceAll(' ', '-'), tamper);
      const result = await idem(
        'audit',
        'verify',
        '--db',
        path,
        '--head',
        join(dir, 'journal-head.json'),
        '--public-key',
        join(dir, 'journal-signing.pub'),
        '--json',
      );
      const report = JSON.parse(result.stdout) as { ok: boolean; firstBad: { seq: number; problem: string } };
      expect(report.firstBad).toMatchObject({ seq: typeof seq === 'function' ? seq() : seq, problem });
      expect(result.code).toBe(1);
    });
  }

  it('an export with one edited line fails too, naming its seq', async () => {
    const out = join(dir, 'export.jsonl');
    expect((await idem('audit', 'export', '--db', db, '--stream', 'activity', '--out', out)).code).toBe(0);
    const lines = readFileSync(out, 'utf8').split('\n');
    // The first activity row from the middle on that names alice (a row of one event, or of several).
    const index = lines.findIndex(
      (l) =>
        l.includes('"stream":"activity"') &&
        l.includes('"token:alice"') &&
        (JSON.parse(l) as { seq: number }).seq >= middle,
    );
    const seq = (JSON.parse(lines[index] as string) as { seq: number }).seq;
    lines[index] = (lines[index] as string).replace('"token:alice"', '"token:mallory"');
    const edited = join(dir, 'edited.jsonl');
    (await import('node:fs')).writeFileSync(edited, lines.join('\n'));
    expect((await idem('audit', 'verify', '--file', out)).code).toBe(0);
    const result = await idem('audit', 'verify', '--file', edited);
    expect(result.stdout).toContain(`first bad seq ${seq} (edited)`);
    expect(result.code).toBe(1);
  });

  it('heads shipped off the host (`sign --json`) catch a truncation once the local heads are gone', async () => {
    const signed = await idem('audit', 'sign', '--db', db, '--json');
    expect(signed.code).toBe(0);
    const shipped = join(dir, 'shipped-heads.jsonl');
    writeFileSync(shipped, signed.stdout);
    let kept = 0;
    const path = tamperedCopy('truncated-unsigned', (h) => {
      h.prepare('DELETE FROM activity_journal WHERE seq > ?').run(total - 100);
      kept = h.prepare('SELECT max(seq) FROM activity_journal').pluck().get() as number;
    });
    const noLocalHeads = join(dir, 'no-such-head.json');
    const pub = join(dir, 'journal-signing.pub');
    const withShipped = await idem(
      'audit',
      'verify',
      '--db',
      path,
      '--head',
      noLocalHeads,
      '--heads',
      shipped,
      '--public-key',
      pub,
      '--json',
    );
    expect(JSON.parse(withShipped.stdout).firstBad).toMatchObject({
      seq: kept + 1,
      problem: 'truncated',
      stream: 'activity',
    });
    expect(withShipped.code).toBe(1);
  });

  it('a missing store is an error (exit 2), not a verdict', async () => {
    const result = await idem('audit', 'verify', '--db', join(dir, 'nope.db'));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no store at');
  });
});

describe('the gateway signs the journal heads on each sweep', () => {
  it('with the key configured outside the data directory: heads appear and follow the journal, with no restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-audit-gw-'));
    const keyDir = mkdtempSync(join(tmpdir(), 'idem-audit-gw-key-'));
    const gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: dataDir,
        journal_signing_key_file: join(keyDir, 'journal-signing.key'),
        sweep_interval: '50ms',
        upstreams: { unused: { command: process.execPath, args: ['-e', ''] } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    const signedSeq = () => {
      const heads = readSignedHeads(join(dataDir, 'journal-head.json'));
      return heads.find((h) => h.stream === 'activity')?.seq ?? 0;
    };
    try {
      for (const target of [3, 5]) {
        const head = (await gateway.store.journalHead('activity'))?.seq ?? 0;
        await gateway.store.appendEvents(
          Array.from({ length: target - head }, (_, i) => ({
            kind: 'receipt_hit' as const,
            requestRef: `r${i}`,
          })),
        );
        await vi.waitFor(
          () => expect(signedSeq() === target, `a signed head at seq ${target}`).toBe(true),
          PATIENTLY,
        );
      }
      const publicKeyPem = readFileSync(join(keyDir, 'journal-signing.pub'), 'utf8');
      for (const head of readSignedHeads(join(dataDir, 'journal-head.json')))
        expect(verifySignedHead(head, publicKeyPem)).toBe(true);
      expect(existsSync(join(dataDir, 'journal-signing.key'))).toBe(false);
    } finally {
      await gateway.close();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(keyDir, { recursive: true, force: true });
    }
  });
});
