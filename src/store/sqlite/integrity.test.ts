import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimInput, fillWithCompleted } from '../../../test/support/claim-input.js';
import { CountingTarget } from '../../../test/support/counting-target.js';
import { resolveContract } from '../../contracts/contract.js';
import { IDEM_CODES, StoreRefusedError } from '../../errors.js';
import { idemCodeOf } from '../../executions/answers.js';
import type { ToolCall } from '../../executions/call.js';
import { ExecutionEngine } from '../../executions/engine.js';
import { Fingerprinter } from '../../identity/fingerprint.js';
import { SqliteStore } from './sqlite-store.js';

const PAGE_SIZE = 4096;

/** A store with completed executions and their journal, closed: a file as a gateway leaves it. */
async function storeWithExecutions(path: string, count = 200): Promise<string[]> {
  const store = await SqliteStore.open({ path });
  const ids = await fillWithCompleted(store, count);
  await store.close();
  return ids;
}

/** Page numbers of one b-tree's pages of a kind, read from SQLite's own page map. */
function pagesOf(path: string, tree: string, kind: 'leaf' | 'internal'): number[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare<[string, string], { pageno: number }>(
        'SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno',
      )
      .all(tree, kind)
      .map((row) => row.pageno);
  } finally {
    db.close();
  }
}

function overwrite(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    closeSync(fd);
  }
}

const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

async function refusalOf(path: string): Promise<StoreRefusedError> {
  const error = await SqliteStore.open({ path }).then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreRefusedError);
  return error as StoreRefusedError;
}

describe('a damaged SQLite store is refused at open', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'idem-integrity-'));
    path = join(dir, 'idem.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('names the file, the damage and the way out, and leaves the file as it was', async () => {
    await storeWithExecutions(path);
    const [leaf] = pagesOf(path, 'executions', 'leaf');
    // A table leaf page's header: its type byte and cell count become nonsense.
    overwrite(path, (leaf! - 1) * PAGE_SIZE, Buffer.alloc(8, 0xff));
    const before = digest(path);

    const error = await refusalOf(path);
    expect(error.reason).toBe('corrupt');
    expect(error.path).toBe(path);
    expect(error.code).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(error.message).toContain(path);
    expect(error.message).toContain('.recover');
    expect(error.message).toContain('idem executions list --state dispatched,unknown');
    // Refused before anything was written: not migrated, not "repaired", not truncated.
    expect(digest(path)).toBe(before);
  });

  it('refuses flipped bytes in the index that finds earlier executions, which reads alone never touch', async () => {
    const ids = await storeWithExecutions(path);
    const [indexLeaf] = pagesOf(path, 'executions_active_fingerprint', 'leaf');
    overwrite(path, (indexLeaf! - 1) * PAGE_SIZE + 8, randomBytes(24));
    // The table itself still reads: without a check at open, this store would be used.
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT COUNT(*) AS n FROM executions').get()).toEqual({ n: ids.length });
    db.close();

    expect((await refusalOf(path)).reason).toBe('corrupt');
  });

  it('refuses an index entry that no longer matches its row, which quick_check passes and a repeat would dispatch past', async () => {
    await storeWithExecutions(path);
    const [indexLeaf] = pagesOf(path, 'executions_active_fingerprint', 'leaf');
    // One byte inside the last cell's key (cells fill a page from its end): one fingerprint changes.
    overwrite(path, indexLeaf! * PAGE_SIZE - 8, Buffer.from([0x5a]));
    const db = new Database(path, { readonly: true });
    expect(db.pragma('quick_check', { simple: true })).toBe('ok');
    const missing = db
      .prepare<[], { id: string; fingerprint: Buffer }>('SELECT id, fingerprint FROM executions')
      .all()
      .filter(
        (row) =>
          db
            .prepare('SELECT id FROM executions WHERE fingerprint = ? AND active = 1')
            .get(row.fingerprint) === undefined,
      );
    db.close();
    // That execution can no longer be found by its fingerprint: its repeat would be claimed anew.
    expect(missing.length).toBe(1);

    const error = await refusalOf(path);
    expect(error.reason).toBe('corrupt');
    expect(error.message).toMatch(/missing from index executions_active_fingerprint/);
  });

  it('refuses a damaged interior page of the executions table', async () => {
    await storeWithExecutions(path);
    const [interior] = pagesOf(path, 'executions', 'internal');
    overwrite(path, (interior! - 1) * PAGE_SIZE, Buffer.alloc(12, 0xff));
    expect((await refusalOf(path)).reason).toBe('corrupt');
  });

  it('refuses a truncated file', async () => {
    await storeWithExecutions(path);
    const size = readFileSync(path).length;
    truncateSync(path, Math.floor(size / 2) + 100);
    const error = await refusalOf(path);
    expect(error.reason).toBe('corrupt');
    expect(error.message).toContain(path);
  });

  it('refuses a file that is not SQLite at all, and one whose header was zeroed', async () => {
    writeFileSync(path, 'deploy log, not a database\n'.repeat(400));
    const text = await refusalOf(path);
    expect(text.reason).toBe('not_a_database');
    expect(text.message).toContain(`${path} (not_a_database)`);
    expect(readFileSync(path, 'utf8')).toBe('deploy log, not a database\n'.repeat(400));

    const other = join(dir, 'zeroed.db');
    await storeWithExecutions(other, 20);
    overwrite(other, 0, Buffer.alloc(16));
    expect((await refusalOf(other)).reason).toBe('not_a_database');
  });

  it('opens an intact store with many executions, and an empty new one', async () => {
    const ids = await storeWithExecutions(path);
    const store = await SqliteStore.open({ path });
    expect((await store.list({ limit: 1000 })).length).toBe(ids.length);
    await store.close();
    const fresh = await SqliteStore.open({ path: join(dir, 'new.db') });
    await fresh.close();
  });
});

describe('a damaged value inside a row', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'idem-integrity-'));
    path = join(dir, 'idem.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses the reads of that row with the file named, and only those: SQLite keeps no checksums to find it at open', async () => {
    const ids = await storeWithExecutions(path, 20);
    const bytes = readFileSync(path);
    // A flipped byte inside one stored result's JSON: `"text":"charged 7"` → `"text"X"charged 7"`.
    // (Every copy of it: a page split can leave an old one in a free page.)
    let copies = 0;
    for (
      let at = bytes.indexOf('"text":"charged 7"');
      at >= 0;
      at = bytes.indexOf('"text":"charged 7"', at + 1)
    ) {
      overwrite(path, at + 6, Buffer.from('X'));
      copies++;
    }
    expect(copies).toBeGreaterThan(0);

    const store = await SqliteStore.open({ path });
    try {
      const read = await store.get(ids[7]!).catch((e: unknown) => e);
      expect(read).toBeInstanceOf(StoreRefusedError);
      expect((read as StoreRefusedError).reason).toBe('corrupt');
      expect((read as StoreRefusedError).message).toContain(path);
      // The rest of the store is sound, and stays in use.
      expect((await store.get(ids[6]!))?.state).toBe('completed');
      expect((await store.claim(claimInput())).won).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe('a store that cannot read back what it wrote dispatches nothing', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'idem-integrity-'));
    path = join(dir, 'idem.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const call = (orderId: string): ToolCall => ({
    tool: 'charge_card',
    channel: 'library',
    target: 'local',
    credentialRef: null,
    method: 'tools/call',
    arguments: { order_id: orderId, amount_cents: 1999 },
    contract: resolveContract({ replay: 'keyed', scope: { business_key: 'order_id' } }, undefined),
    caller: { actor: 'token:ci', session: null },
  });

  it('answers IDEM_NOT_EXECUTED when a claim is written but cannot be found again, and refuses from then on', async () => {
    await (await SqliteStore.open({ path })).close();
    // A write the engine is told succeeded, that the dedup index then cannot find: the
    // next claim of the same intent would dispatch again. A trigger loses it for real.
    const db = new Database(path);
    db.exec(`CREATE TRIGGER lose_claims AFTER INSERT ON executions
      BEGIN UPDATE executions SET active = 0 WHERE id = NEW.id; END`);
    db.close();

    const store = await SqliteStore.open({ path });
    const engine = new ExecutionEngine({ store, fingerprinter: new Fingerprinter(randomBytes(32)) });
    const target = new CountingTarget();
    try {
      expect(idemCodeOf(await engine.execute(call('A-1'), target.dispatch))).toBe(
        IDEM_CODES.IDEM_NOT_EXECUTED,
      );
      expect(idemCodeOf(await engine.execute(call('A-1'), target.dispatch))).toBe(
        IDEM_CODES.IDEM_NOT_EXECUTED,
      );
      expect(target.invocations).toBe(0);
      // The store refuses every later call too, reads included, until it is reopened and checked.
      const refused = await store.list().catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreRefusedError);
      expect((refused as StoreRefusedError).reason).toBe('corrupt');
    } finally {
      await store.close();
    }
  });
});
