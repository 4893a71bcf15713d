import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import { StoreRefusedError, StoreUnavailableError } from '../../errors.js';
import { chainHash, entryBody, GENESIS_HASH } from '../../journal/chain.js';
import type { ActivityEntry } from '../../journal/events.js';
import { openStore } from '../index.js';
import { describeStoreContract } from '../store.contract.js';
import type { ClaimInput } from '../types.js';
import { MIGRATIONS, migrate, SCHEMA_VERSION, schemaVersion } from './migrations.js';
import { bytesPerExecutionRow } from './row-bytes.js';
import { SqliteStore } from './sqlite-store.js';

function expectValidChain(entries: ActivityEntry[]): void {
  let prev = GENESIS_HASH;
  entries.forEach((entry, index) => {
    expect(entry.seq).toBe(index + 1);
    expect(entry.prevHash).toBe(prev);
    expect(entry.hash).toBe(chainHash(prev, entryBody(entry)));
    prev = entry.hash;
  });
}

function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

describeStoreContract('sqlite file', async () => {
  const tmp = tempDir();
  const store = await SqliteStore.open({ path: join(tmp.dir, 'idem.db') });
  return {
    store,
    cleanup: async () => {
      await store.close();
      tmp.remove();
    },
  };
});

describeStoreContract('sqlite file, test clock', async () => {
  const tmp = tempDir();
  let now = Date.now();
  const store = await SqliteStore.open({ path: join(tmp.dir, 'idem.db'), clock: () => now });
  return {
    store,
    clock: {
      advance(ms: number) {
        now += ms;
      },
    },
    cleanup: async () => {
      await store.close();
      tmp.remove();
    },
  };
});

describe('SqliteStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  let path: string;
  const opened: { close(): unknown }[] = [];

  beforeEach(() => {
    tmp = tempDir();
    path = join(tmp.dir, 'idem.db');
  });

  afterEach(async () => {
    for (const handle of opened.splice(0)) await handle.close();
    tmp.remove();
  });

  async function open(options: Partial<Parameters<typeof SqliteStore.open>[0]> = {}): Promise<SqliteStore> {
    const store = await SqliteStore.open({ path, ...options });
    opened.push(store);
    return store;
  }

  function raw(options?: Database.Options): Database.Database {
    const db = new Database(path, options);
    opened.push(db);
    return db;
  }

  describe('the file', () => {
    it('runs in WAL mode, durable by default (the connection commits with NORMAL; group commit syncs the WAL) and a busy timeout', async () => {
      const db = raw();
      opened.pop();
      const store = new SqliteStore(db);
      opened.push(store);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(1);
      expect(store.synchronous()).toBe('full');
      await store.claim(claimInput());
      expect(store.commitStats()).toMatchObject({ commits: 1, synced: 1 });
      expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
      expect(store.kind).toBe('sqlite');
    });

    it('trades that for speed only when asked: synchronous "normal"', async () => {
      const store = await open({ synchronous: 'normal' });
      expect(store.synchronous()).toBe('normal');
      await expect(open({ synchronous: 'off' as 'normal' })).rejects.toThrow(/synchronous must be/);
    });

    it('is created 0600, and so are its -wal and -shm files', async () => {
      const store = await open();
      await store.claim(claimInput());
      for (const file of [path, `${path}-wal`, `${path}-shm`]) {
        expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      }
    });

    it('keeps executions and the journal across a reopen, and the chain continues', async () => {
      const first = await SqliteStore.open({ path });
      const input = claimInput();
      await first.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
      const outcome = { result: { content: [{ type: 'text' as const, text: 'done ✓' }] } };
      const done = await first.transition({ id: input.id, from: ['accepted'], to: 'completed', outcome });
      await first.close();

      const second = await open();
      const { readAt: _a, ...before } = done!;
      const { readAt: _b, ...after } = (await second.get(input.id))!;
      expect(after).toEqual(before);
      expect((await second.findActive(input.fingerprint))?.id).toBe(input.id);
      expect((await second.claim(claimInput({ fingerprint: input.fingerprint }))).won).toBe(false);
      await second.appendEvents([{ kind: 'delivered', executionId: input.id }]);
      const journal = await second.readJournal();
      expect(journal.map((e) => e.kind)).toEqual(['accepted', 'delivered']);
      expectValidChain(journal);
    });

    it('stores an fp_ fingerprint as 32 bytes and keeps any other spelling verbatim', async () => {
      const store = await open();
      const canonical = newFingerprint();
      // Same bytes as some canonical fingerprint, but the last character's spare bits are set.
      const lastIsA = `fp_${Buffer.alloc(32).toString('base64url')}`;
      const nonCanonical = `${lastIsA.slice(0, -1)}B`;
      const odd = ['fp_short', 'sha256:abc', nonCanonical];
      for (const fp of [canonical, lastIsA, ...odd]) {
        const input = claimInput({ fingerprint: fp });
        expect((await store.claim(input)).won).toBe(true);
        expect((await store.get(input.id))?.fingerprint).toBe(fp);
        expect((await store.findActive(fp))?.id).toBe(input.id);
      }
      const db = raw({ readonly: true });
      const types = db
        .prepare<[], { type: string; size: number }>(
          'SELECT typeof(fingerprint) AS type, length(fingerprint) AS size FROM executions ORDER BY id',
        )
        .all();
      expect(types).toEqual([
        { type: 'blob', size: 32 },
        { type: 'blob', size: 32 },
        { type: 'text', size: 8 },
        { type: 'text', size: 10 },
        { type: 'text', size: 46 },
      ]);
    });
  });

  describe('several processes on one file', () => {
    it('two stores on one file give exactly one winner of 200 concurrent claims', async () => {
      const [a, b] = [await open(), await open()];
      const fp = newFingerprint();
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => {
          const input = claimInput({ fingerprint: fp });
          return (i % 2 ? a : b).claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
        }),
      );
      expect(results.filter((r) => r.won)).toHaveLength(1);
      const winner = results.find((r) => r.won)!.record!.id;
      expect(results.every((r) => r.record?.id === winner)).toBe(true);
      expect((await a.findActive(fp))?.id).toBe(winner);
      expect((await b.readJournal()).map((e) => e.executionId)).toEqual([winner]);
    });

    it('real processes racing on one file: one winner per fingerprint and one valid journal chain', async () => {
      await (await open()).close();
      const fingerprints = Array.from({ length: 100 }, newFingerprint);
      const storeModule = new URL('./sqlite-store.ts', import.meta.url).href;
      // .mts: the temp dir has no package.json to make a .ts file an ES module.
      const script = join(tmp.dir, 'claimer.mts');
      writeFileSync(
        script,
        `
        import { randomBytes } from 'node:crypto';
        import { SqliteStore } from ${JSON.stringify(storeModule)};
        const [path, who, list] = process.argv.slice(2);
        const store = await SqliteStore.open({ path });
        process.stdout.write('ready\\n');
        await new Promise((resolve) => process.stdin.once('data', resolve));
        const won = [];
        // Each process walks the list in its own order, so they meet on every fingerprint.
        const order = JSON.parse(list).sort(() => Math.random() - 0.5);
        for (const fingerprint of order) {
          const id = 'exe_' + Date.now().toString(36) + randomBytes(10).toString('hex');
          const result = await store.claim(
            { id, fingerprint, actor: 'a', tool: 't', session: null, replay: 'keyed', state: 'accepted',
              attachWindowMs: 60000, claimToken: who, leaseOwner: who, leaseMs: 60000, argumentsPreview: '{}' },
            { events: [{ kind: 'accepted', executionId: id, detail: { who } }] },
          );
          if (result.won) won.push(fingerprint);
          // A pause between claims; without it the busy handler's backoff lets one process take every lock.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
        }
        await store.close();
        process.stdout.write(JSON.stringify(won) + '\\n');
        `,
      );
      const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
      const children = Array.from({ length: 4 }, (_, i) => {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', script, path, `p${i}`, JSON.stringify(fingerprints)],
          {
            cwd: repoRoot,
            stdio: ['pipe', 'pipe', 'inherit'],
          },
        );
        let out = '';
        child.stdout.setEncoding('utf8');
        const ready = new Promise<void>((resolve, reject) => {
          child.stdout.on('data', (chunk: string) => {
            out += chunk;
            if (out.startsWith('ready\n')) resolve();
          });
          child.on('exit', () => reject(new Error(`claimer ${i} exited before it was ready`)));
        });
        const done = new Promise<string[]>((resolve, reject) => {
          child.on('error', reject);
          child.on('exit', (code) => {
            if (code !== 0) reject(new Error(`claimer ${i} exited with ${code}`));
            else resolve(JSON.parse(out.slice('ready\n'.length)));
          });
        });
        return { child, ready, done };
      });
      await Promise.all(children.map((c) => c.ready));
      for (const { child } of children) child.stdin.end('go\n');
      const wins = (await Promise.all(children.map((c) => c.done))).flat();

      expect(wins.sort()).toEqual([...fingerprints].sort());
      const store = await open();
      const journal = await store.readJournal();
      expect(journal).toHaveLength(fingerprints.length);
      expectValidChain(journal);
      for (const fp of fingerprints) expect(await store.findActive(fp)).toBeDefined();
    });
  });

  describe('migrations', () => {
    it('are numbered 1, 2, 3, … in order', () => {
      expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
      expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
    });

    it('are applied once: reopening changes nothing', async () => {
      await (await SqliteStore.open({ path })).close();
      const schema = () => {
        const db = new Database(path, { readonly: true });
        try {
          return {
            version: schemaVersion(db),
            objects: db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name').all(),
          };
        } finally {
          db.close();
        }
      };
      const first = schema();
      expect(first.version).toBe(SCHEMA_VERSION);
      await (await SqliteStore.open({ path })).close();
      await (await SqliteStore.open({ path })).close();
      expect(schema()).toEqual(first);
    });

    it('apply only what is missing, in order, and roll a failing step back whole', () => {
      const db = new Database(':memory:');
      opened.push(db);
      const steps = [
        { version: 1, name: 'a', sql: 'CREATE TABLE a (x INTEGER);' },
        { version: 2, name: 'b', sql: 'CREATE TABLE b (x INTEGER);' },
      ];
      expect(migrate(db, steps.slice(0, 1))).toBe(1);
      expect(migrate(db, steps)).toBe(2);
      expect(migrate(db, steps)).toBe(2);
      const broken = [
        ...steps,
        { version: 3, name: 'c', sql: 'CREATE TABLE c (x INTEGER); CREATE TABLE a (y);' },
      ];
      expect(() => migrate(db, broken)).toThrow(/already exists/);
      expect(schemaVersion(db)).toBe(2);
      expect(db.prepare("SELECT name FROM sqlite_schema WHERE name = 'c'").get()).toBeUndefined();
    });

    it('bring a file from before request digests (schema 2) up to date: its rows read with none', async () => {
      const db = new Database(path);
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 2),
      );
      db.prepare(`
        INSERT INTO executions (id, fingerprint, active, actor, tool, session, replay, state, created_at,
          updated_at, attach_until, arguments_preview)
        VALUES ('exe_old', 'fp_old', 1, 'a', 't', NULL, 'keyed', 'completed', 1, 1, 2, '{}')`).run();
      db.close();

      const store = await SqliteStore.open({ path });
      try {
        expect(await store.get('exe_old')).toMatchObject({ id: 'exe_old', requestDigest: null });
        const requestDigest = newFingerprint();
        const fresh = await store.claim(claimInput({ requestDigest }));
        expect(fresh.record?.requestDigest).toBe(requestDigest);
      } finally {
        await store.close();
      }
    });

    it('refuse a file whose schema is newer than this code knows', async () => {
      await (await SqliteStore.open({ path })).close();
      const db = new Database(path);
      db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      db.close();
      await expect(SqliteStore.open({ path })).rejects.toThrow(StoreUnavailableError);
      await expect(SqliteStore.open({ path })).rejects.toThrow(/newer than this Idem knows/);
    });
  });

  describe('failures become StoreUnavailableError (fail closed)', () => {
    it('when the store is closed', async () => {
      const store = await open();
      await store.close();
      await expect(store.claim(claimInput())).rejects.toThrow(StoreUnavailableError);
      await expect(store.get('exe_x')).rejects.toThrow(StoreUnavailableError);
      await expect(store.close()).resolves.toBeUndefined();
    });

    it('when another process holds the write lock past the busy timeout (SQLITE_BUSY)', async () => {
      const store = await open({ busyTimeoutMs: 100 });
      const input = claimInput();
      await store.claim(input);
      const other = raw();
      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      const error = await store.claim(claimInput()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).code).toBe('IDEM_NOT_EXECUTED');
      expect(String((error as Error).cause)).toMatch(/locked|busy/i);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      // WAL: readers are not blocked by the writer.
      expect((await store.get(input.id))?.id).toBe(input.id);
      other.exec('COMMIT');
      expect((await store.claim(claimInput())).won).toBe(true);
    });

    it('when the disk is full (SQLITE_FULL)', async () => {
      await (await SqliteStore.open({ path })).close();
      const db = raw();
      opened.pop();
      const store = new SqliteStore(db);
      opened.push(store);
      const pages = db.pragma('page_count', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages}`);
      const big = 'x'.repeat(2000);
      let error: unknown;
      for (let i = 0; i < 100 && error === undefined; i++) {
        error = await store.claim(claimInput({ argumentsPreview: big })).then(
          () => undefined,
          (e: unknown) => e,
        );
      }
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(((error as Error).cause as { code: string }).code).toBe('SQLITE_FULL');
    });

    it('when the file is read-only (SQLITE_READONLY)', async () => {
      await (await SqliteStore.open({ path })).close();
      const store = new SqliteStore(new Database(path, { readonly: true }));
      opened.push(store);
      const error = await store.claim(claimInput()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(((error as Error).cause as { code: string }).code).toMatch(/^SQLITE_READONLY/);
      expect(await store.list()).toEqual([]);
    });

    it('when the file cannot be opened or is not a database', async () => {
      await expect(SqliteStore.open({ path: join(tmp.dir, 'missing', 'idem.db') })).rejects.toThrow(
        StoreUnavailableError,
      );
      writeFileSync(path, randomBytes(8192));
      await expect(SqliteStore.open({ path })).rejects.toThrow(StoreUnavailableError);
    });

    it('but a bug stays a bug: reusing an execution id is not "unavailable"', async () => {
      const store = await open();
      const input = claimInput();
      await store.claim(input);
      const error = await store.claim(claimInput({ id: input.id })).catch((e: unknown) => e);
      expect(error).not.toBeInstanceOf(StoreUnavailableError);
      expect((error as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    });
  });

  describe('group commit: writes asked for in one turn share one transaction', () => {
    /** Executions visible to another connection: what is committed. */
    function committedIds(): string[] {
      const reader = raw({ readonly: true });
      const ids = reader.prepare('SELECT id FROM executions ORDER BY id').pluck().all() as string[];
      reader.close();
      return ids;
    }

    it('settles each claim only after the commit that holds all of them', async () => {
      const store = await open();
      const inputs = Array.from({ length: 16 }, () => claimInput());
      const claims = inputs.map((input) =>
        store.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] }),
      );
      // Queued, not yet written: nothing is visible until the batch commits.
      expect(committedIds()).toEqual([]);
      const first = await claims[0];
      // When the first caller hears "won", every claim of the batch is already committed with it.
      expect(first?.won).toBe(true);
      expect(committedIds()).toEqual(inputs.map((input) => input.id).sort());
      expect((await Promise.all(claims)).every((claim) => claim.won)).toBe(true);
      const journal = await store.readJournal();
      expect(journal.map((entry) => entry.executionId)).toEqual(inputs.map((input) => input.id));
      expectValidChain(journal);
    });

    it('keeps the claim semantics inside a batch: one winner per fingerprint, the other sees it', async () => {
      const store = await open();
      const fingerprint = newFingerprint();
      const [a, b] = await Promise.all([
        store.claim(claimInput({ fingerprint })),
        store.claim(claimInput({ fingerprint })),
      ]);
      expect(a?.won).toBe(true);
      expect(b?.won).toBe(false);
      expect(b?.record?.id).toBe(a?.record?.id);
    });

    it('a write that fails alone is undone alone; the rest of its batch commits', async () => {
      const store = await open();
      const taken = claimInput();
      await store.claim(taken);
      const good = [claimInput(), claimInput(), claimInput()];
      const results = await Promise.allSettled([
        store.claim(good[0]!, { events: [{ kind: 'accepted', executionId: good[0]!.id }] }),
        // Reuses an id: a bug, not "unavailable"; its journal entry goes with it.
        store.claim(claimInput({ id: taken.id }), { events: [{ kind: 'accepted', executionId: taken.id }] }),
        store.claim(good[1]!, { events: [{ kind: 'accepted', executionId: good[1]!.id }] }),
        store.claim(good[2]!, { events: [{ kind: 'accepted', executionId: good[2]!.id }] }),
      ]);
      expect(results.map((result) => result.status)).toEqual([
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
      ]);
      const failure = (results[1] as PromiseRejectedResult).reason;
      expect(failure).not.toBeInstanceOf(StoreUnavailableError);
      expect(failure.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
      expect(committedIds()).toEqual([taken.id, ...good.map((input) => input.id)].sort());
      const journal = await store.readJournal();
      expect(journal.map((entry) => entry.executionId)).toEqual(good.map((input) => input.id));
      expectValidChain(journal);
    });

    it('a batch that cannot commit fails every write closed: none recorded, each told "not executed"', async () => {
      const store = await open({ busyTimeoutMs: 50 });
      await store.claim(claimInput());
      const before = committedIds();
      const other = raw();
      other.exec('BEGIN IMMEDIATE');
      const results = await Promise.allSettled(Array.from({ length: 5 }, () => store.claim(claimInput())));
      other.exec('COMMIT');
      for (const result of results) {
        expect(result.status).toBe('rejected');
        const error = (result as PromiseRejectedResult).reason;
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(error.code).toBe('IDEM_NOT_EXECUTED');
      }
      expect(committedIds()).toEqual(before);
    });

    it('when the disk fills mid-batch, every promise settles and no claim answered "won" is missing', async () => {
      await (await SqliteStore.open({ path })).close();
      const db = raw();
      opened.pop();
      const store = new SqliteStore(db);
      opened.push(store);
      db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 4}`);
      const big = 'x'.repeat(3000);
      const inputs = Array.from({ length: 12 }, () => claimInput({ argumentsPreview: big }));
      const results = await Promise.allSettled(inputs.map((input) => store.claim(input)));
      const won = inputs.filter((_, i) => results[i]?.status === 'fulfilled').map((input) => input.id);
      for (const result of results) {
        if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(StoreUnavailableError);
      }
      expect(results.some((result) => result.status === 'rejected')).toBe(true);
      expect(committedIds()).toEqual(won.sort());
    });

    it('close() commits what is still queued: every caller is answered, nothing is lost', async () => {
      const store = await open();
      const inputs = [claimInput(), claimInput()];
      const claims = inputs.map((input) => store.claim(input));
      await store.close();
      expect((await Promise.all(claims)).map((claim) => claim.won)).toEqual([true, true]);
      expect(committedIds()).toEqual(inputs.map((input) => input.id).sort());
    });
  });

  describe('durability per write (src/store/durability.ts): a claim is synced, its outcome rides on the next sync', () => {
    const outcome = { result: { content: [{ type: 'text' as const, text: 'done' }] } };

    async function claimed(store: SqliteStore) {
      const input = claimInput();
      await store.claim(input);
      return input;
    }

    /** The dispatch's holder records its own outcome: the write durability.ts lets ride on the next sync. */
    const holderOutcome = (store: SqliteStore, input: ClaimInput) =>
      store.transition({
        id: input.id,
        from: ['accepted'],
        to: 'completed',
        token: input.claimToken,
        outcome,
      });

    it('the claim waits for a sync of the WAL; the holder recording its outcome, a delivery and events do not', async () => {
      const store = await open();
      const input = await claimed(store);
      expect(store.commitStats()).toMatchObject({ commits: 1, synced: 1 });
      await holderOutcome(store, input);
      await store.markDelivered(input.id, [{ kind: 'delivered', executionId: input.id }]);
      await store.appendEvents([{ kind: 'receipt_hit', executionId: input.id }]);
      expect(store.commitStats()).toMatchObject({ commits: 4, synced: 1 });
      expect((await store.get(input.id))?.state).toBe('completed');
    });

    it('every write that lets something go ahead is synced: a dispatch, an operator resolution, and a batch holding a claim', async () => {
      const store = await open();
      const input = await claimed(store);
      await store.transition({ id: input.id, from: ['accepted'], to: 'dispatched', token: input.claimToken });
      // No token: an operator (or the sweeper, or a probe) decided it, not the dispatch's holder.
      await store.transition({ id: input.id, from: ['dispatched'], to: 'failed', outcome });
      await Promise.all([
        store.claim(claimInput()),
        store.transition({ id: input.id, from: ['failed'], to: 'failed', token: 'none' }),
      ]);
      expect(store.commitStats()).toMatchObject({ commits: 4, synced: 4 });
    });

    it('an outcome no sync follows is synced by the timer within the bound', async () => {
      const store = await open();
      const input = await claimed(store);
      await holderOutcome(store, input);
      await vi.waitFor(() => expect(store.commitStats().timerSyncs).toBe(1), { timeout: 5_000 });
    });

    it('a WAL that cannot be synced refuses the store: the claim is not answered "won", and nothing later is written', async () => {
      const store = await open();
      // The store's own writes (the migrations) made the -wal file; its sync opens it at the
      // first sync. Unlinked now, SQLite goes on writing to its open descriptor, and the
      // sync cannot reach the file: the disk's answer is a failure, as a failing disk's would be.
      unlinkSync(`${path}-wal`);
      const refused = await store.claim(claimInput()).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StoreRefusedError);
      expect(refused).toMatchObject({ reason: 'sync_failed' });
      expect((refused as Error).message).toContain('-wal');
      // As after any failed fsync: what the kernel could not write may be gone, so every later
      // call fails closed, a read included.
      await expect(store.claim(claimInput())).rejects.toMatchObject({ reason: 'sync_failed' });
      await expect(store.get('exe_none')).rejects.toBeInstanceOf(StoreRefusedError);
    });

    it('with synchronous "normal", nothing is synced', async () => {
      const store = await open({ synchronous: 'normal' });
      const input = await claimed(store);
      await store.transition({ id: input.id, from: ['accepted'], to: 'completed', token: input.claimToken });
      await store.sweep({ retentionMs: 60_000 });
      expect(store.commitStats()).toMatchObject({ commits: 2, synced: 0, timerSyncs: 0 });
      expect(store.synchronous()).toBe('normal');
    });
  });

  describe('row size', () => {
    /** An execution as the gateway writes one: ULID id, fp_ fingerprint, UUID session, short preview. */
    async function fill(store: SqliteStore, count: number, outcomeText: string): Promise<void> {
      for (let i = 0; i < count; i++) {
        const input = claimInput({
          actor: `user:u${i % 50}@example.com`,
          tool: ['github.create_issue', 'payments.charge', 'mail.send'][i % 3]!,
          session: crypto.randomUUID(),
          leaseOwner: `gw-${i % 4}.prod:31337`,
          argumentsPreview: JSON.stringify({ repo: 'acme/web', title: `Fix #${i}`, labels: ['bug'] }),
        });
        await store.claim(input);
        await store.transition({
          id: input.id,
          from: ['accepted'],
          to: 'dispatched',
          dispatchTimeoutMs: 30_000,
        });
        await store.transition({
          id: input.id,
          from: ['dispatched'],
          to: 'completed',
          holder: null,
          outcome: { result: { content: [{ type: 'text', text: outcomeText }] } },
        });
        await store.markDelivered(input.id);
      }
    }

    it('stays within 300 bytes per execution without the outcome', async () => {
      const store = await open();
      await fill(store, 2000, 'ok');
      const measured = store.measureRowBytes();
      const estimated = bytesPerExecutionRow(new Database(path, { readonly: true }), { method: 'length' });
      console.info('bytes per execution row', { measured, estimated });

      expect(measured.method).toBe('dbstat');
      expect(measured.rows).toBe(2000);
      expect(measured.bytesPerRow).toBeLessThanOrEqual(300);
      for (const key of ['bytesPerRow', 'indexBytesPerRow'] as const) {
        expect(estimated[key]).toBeGreaterThan(measured[key] * 0.85);
        expect(estimated[key]).toBeLessThan(measured[key] * 1.15);
      }
    });

    it('leaves large outcomes out of the figure', async () => {
      const store = await open();
      await fill(store, 200, 'y'.repeat(10_000));
      const measured = store.measureRowBytes();
      expect(measured.outcomeBytes).toBeGreaterThan(200 * 10_000);
      expect(measured.bytesPerRow).toBeLessThanOrEqual(300);
    });
  });

  it('openStore opens each kind', async () => {
    const memory = await openStore({ kind: 'memory' });
    const sqlite = await openStore({ kind: 'sqlite', path });
    opened.push(memory, sqlite);
    expect([memory.kind, sqlite.kind]).toEqual(['memory', 'sqlite']);
    expect((await sqlite.claim(claimInput())).won).toBe(true);
  });
});
