import { randomBytes } from 'node:crypto';
import pgDriver from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import { chainProblems, storedRows } from '../../../test/support/journal-chains.js';
import { postgresForTests, type TestPostgres } from '../../../test/support/postgres.js';
import { claimEvents, usePostgresSchemas, wholeJournal } from '../../../test/support/postgres-schemas.js';
import { journaledTaskRun } from '../../../test/support/task-run.js';
import { StoreUnavailableError } from '../../errors.js';
import { buildEntry, GENESIS_HASH } from '../../journal/chain.js';
import { verifyJournal } from '../../journal/verify.js';
import type { RegisteredHead } from '../../journal/verify-heads.js';
import { verifyStore } from '../../journal/verify-store.js';
import { openStore } from '../index.js';
import { MIGRATIONS, migrate, SCHEMA_VERSION } from './migrations.js';
import { PostgresStore } from './postgres-store.js';

let pg: TestPostgres;
beforeAll(async () => {
  pg = await postgresForTests();
});
afterAll(async () => {
  await pg?.dispose();
});

describe('PostgresStore', () => {
  const schemas = usePostgresSchemas(() => pg);
  const { open, sql, opened } = schemas;

  describe('schema and migrations', () => {
    it('v4 keeps a v3 journal as chain 0, which still verifies; new writes go to chains of their own after it', async () => {
      const client = await pg.admin().connect();
      let prev = GENESIS_HASH;
      try {
        await client.query(`SET search_path TO ${schemas.schema}`);
        await migrate(client, { migrations: MIGRATIONS.filter((m) => m.version <= 3) });
        // A journal as v3 wrote it: one chain from the all-zero genesis, its end in journal_head.
        for (let seq = 1; seq <= 3; seq++) {
          const { entry, detailText } = buildEntry(
            { kind: 'received', executionId: `ex_${seq}` },
            seq,
            1_000,
            prev,
          );
          await client.query(
            `INSERT INTO activity_journal (seq, at, kind, execution_id, detail, prev_hash, hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
            [seq, entry.at, entry.kind, entry.executionId, detailText, entry.prevHash, entry.hash],
          );
          prev = entry.hash;
        }
        await client.query(
          "UPDATE journal_head SET seq = 3, hash = $1, at = 1000 WHERE stream = 'activity'",
          [prev],
        );
      } finally {
        client.release();
      }
      const store = await open();
      await store.appendEvents([{ kind: 'receipt_hit', executionId: 'ex_3' }]);
      const journal = await store.readJournal();
      expect(journal.map((e) => [e.seq, e.chain ?? 0])).toEqual([
        [1, 0],
        [2, 0],
        [3, 0],
        [4, 1],
      ]);
      expect(chainProblems(journal)).toEqual([]);
      const registry = await sql<RegisteredHead>(
        "SELECT chain, seq::float8 AS seq, hash FROM journal_head WHERE stream = 'activity' AND seq > 0 ORDER BY chain",
      );
      expect(registry).toEqual([
        { chain: 0, seq: 3, hash: prev },
        { chain: 1, seq: 4, hash: journal[3]!.hash },
      ]);
      const rows = storedRows(journal);
      const report = await verifyJournal(rows, { registry });
      expect(report).toMatchObject({ ok: true, entries: 4, lastSeq: 4 });
      expect(report.chains?.map((c) => [c.chain, c.entries])).toEqual([
        [0, 3],
        [1, 1],
      ]);
      // The old chain's tail cut off shows against its registered end.
      expect((await verifyJournal(rows.slice(0, 2), { registry })).firstBad).toMatchObject({
        problem: 'truncated',
        seq: 3,
      });
    });

    it('records each applied migration once, and a reopen applies nothing', async () => {
      const first = await open();
      const applied = await sql<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      );
      expect(applied).toEqual(MIGRATIONS.map(({ version, name }) => ({ version, name })));
      expect(applied.at(-1)?.version).toBe(SCHEMA_VERSION);
      const input = claimInput();
      await first.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
      await first.close();

      const second = await open();
      expect(await sql('SELECT version FROM schema_migrations')).toHaveLength(MIGRATIONS.length);
      expect((await second.get(input.id))?.id).toBe(input.id);
      await second.appendEvents([{ kind: 'delivered', executionId: input.id }]);
      expect(chainProblems(await wholeJournal(second))).toEqual([]);
    });

    it('several stores opening one empty database at once migrate it once', async () => {
      const url = await pg.freshDatabase();
      const stores = await Promise.all(
        Array.from({ length: 8 }, () => PostgresStore.open({ url, pool: { max: 2 } })),
      );
      opened.push(...stores);
      const client = new pgDriver.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT version FROM schema_migrations');
        expect(rows).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
      } finally {
        await client.end();
      }
      const results = await Promise.all(stores.map((store) => store.claim(claimInput())));
      expect(results.every((r) => r.won)).toBe(true);
    });

    it('creates the schema it is given', async () => {
      const name = `${schemas.schema}_new`;
      const store = await open({ schema: name });
      try {
        expect((await store.claim(claimInput())).won).toBe(true);
        const [row] = await sql<{ n: string }>(`SELECT count(*) AS n FROM ${name}.executions`);
        expect(Number(row!.n)).toBe(1);
      } finally {
        await store.close();
        await pg.admin().query(`DROP SCHEMA ${name} CASCADE`);
      }
    });

    it('brings a schema from before request digests (version 1) up to date: its rows read with none', async () => {
      const client = await pg.admin().connect();
      try {
        await client.query(`SET search_path TO ${schemas.schema}`);
        await migrate(client, { migrations: MIGRATIONS.filter((m) => m.version <= 1) });
        await client.query(`
          INSERT INTO executions (created_at, updated_at, attach_until, state, replay, active, id, fingerprint,
            actor, tool, arguments_preview)
          VALUES (1, 1, 2, 'completed', 'keyed', true, 'exe_old', '\\xff6670', 'a', 't', '{}')`);
      } finally {
        client.release();
      }
      const store = await open();
      expect(await store.get('exe_old')).toMatchObject({ id: 'exe_old', requestDigest: null });
      const requestDigest = newFingerprint();
      expect((await store.claim(claimInput({ requestDigest }))).record?.requestDigest).toBe(requestDigest);
      expect(await sql('SELECT version FROM schema_migrations')).toHaveLength(MIGRATIONS.length);
    });

    it('brings a schema from before tasks (version 4) up to date: its rows kept, with no upstream task, and tasks open on them', async () => {
      const client = await pg.admin().connect();
      try {
        await client.query(`SET search_path TO ${schemas.schema}`);
        await migrate(client, { migrations: MIGRATIONS.filter((m) => m.version <= 4) });
        await client.query(`
          INSERT INTO executions (created_at, updated_at, attach_until, state, replay, active, id, fingerprint,
            actor, tool, arguments_preview, outcome)
          VALUES (1, 1, 2, 'completed', 'keyed', true, 'exe_old', '\\xff6670', 'a', 't', '{}',
            '{"result":{"content":[]}}')`);
        await client.query(`
          INSERT INTO approval_requests (execution_id, policy, channel, target, requested_at, expires_at)
          VALUES ('exe_old', 'every_call', 'mcp', 'up', 1, 2)`);
      } finally {
        client.release();
      }
      const store = await open();
      expect(await sql('SELECT version FROM schema_migrations')).toHaveLength(MIGRATIONS.length);
      expect(await store.get('exe_old')).toMatchObject({
        id: 'exe_old',
        state: 'completed',
        outcome: { result: { content: [] } },
        upstreamTask: null,
      });
      expect(await store.getApproval('exe_old')).toMatchObject({ executionId: 'exe_old', target: 'up' });
      const task = await store.openTask({
        taskId: 'tsk_old',
        executionId: 'exe_old',
        actor: 'a',
        generation: 'v1',
        ttlMs: null,
        pollIntervalMs: 1_000,
      });
      expect((await store.getTask('tsk_old'))?.task).toEqual(task);
      expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(1);
      expect(await sql('SELECT task_id FROM tasks')).toEqual([]);
    });

    it('refuses a schema newer than it knows', async () => {
      await open();
      await sql("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')");
      const error = await PostgresStore.open({ url: pg.url, schema: schemas.schema }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toContain(
        `version 99, newer than this Idem knows (${SCHEMA_VERSION})`,
      );
    });

    it('keeps both journals append-only', async () => {
      const store = await open();
      await store.appendEvents([{ kind: 'received', requestRef: 'req:1' }]);
      await store.appendEvents([{ kind: 'session_start', requestRef: 'ses_1' }], 'sessions');
      for (const table of ['activity_journal', 'sessions_journal']) {
        await expect(sql(`UPDATE ${table} SET kind = $1`, ['denied'])).rejects.toThrow(/append-only/);
        await expect(sql(`DELETE FROM ${table}`)).rejects.toThrow(/append-only/);
        await expect(sql(`TRUNCATE ${table}`)).rejects.toThrow(/append-only/);
      }
      expect(await wholeJournal(store)).toHaveLength(1);
      expect(await store.readJournal(0, 10, 'sessions')).toHaveLength(1);
    });
  });

  describe('fingerprints', () => {
    it('stores an fp_ fingerprint as its 32 bytes and keeps any other spelling verbatim', async () => {
      const store = await open();
      const canonical = newFingerprint();
      const lastIsA = `fp_${Buffer.alloc(32).toString('base64url')}`;
      const nonCanonical = `${lastIsA.slice(0, -1)}B`;
      const others = [nonCanonical, 'legacy:abc', 'x'.repeat(31), 'é'.repeat(16), '', lastIsA];
      for (const fp of [canonical, ...others]) {
        const input = claimInput({ fingerprint: fp });
        expect((await store.claim(input)).won).toBe(true);
        expect((await store.findActive(fp))?.id).toBe(input.id);
        expect((await store.get(input.id))?.fingerprint).toBe(fp);
      }
      const sizes = await sql<{ n: number }>(
        'SELECT octet_length(fingerprint) AS n FROM executions ORDER BY id',
      );
      expect(sizes.map((r) => r.n)).toEqual([32, 47, 11, 33, 33, 1, 32]);
    });
  });

  describe('row size', () => {
    /** An execution as the gateway writes one: ULID id, fp_ fingerprint, UUID session, short preview. */
    async function fill(store: PostgresStore, count: number, outcomeText: string): Promise<void> {
      const work = Array.from({ length: count }, (_, i) => async () => {
        const input = claimInput({
          actor: `user:u${i % 50}@example.com`,
          tool: ['github.create_issue', 'payments.charge', 'mail.send'][i % 3]!,
          session: crypto.randomUUID(),
          leaseOwner: `gw-${i % 4}.prod:31337`,
          state: 'dispatched',
          dispatchTimeoutMs: 30_000,
          argumentsPreview: JSON.stringify({ repo: 'acme/web', title: `Fix #${i}`, labels: ['bug'] }),
        });
        await store.claim(input, { events: claimEvents(input) });
        await store.transition({
          id: input.id,
          from: ['dispatched'],
          to: 'completed',
          token: input.claimToken,
          holder: null,
          outcome: { result: { content: [{ type: 'text', text: outcomeText }] } },
          delivered: true,
          events: [{ kind: 'outcome', executionId: input.id }],
        });
      });
      // A few at a time, as gateways write them.
      for (let i = 0; i < work.length; i += 8) await Promise.all(work.slice(i, i + 8).map((w) => w()));
    }

    it('stays within 300 bytes per execution without the outcome', async () => {
      const store = await open();
      await fill(store, 2000, 'ok');
      const measured = await store.measureRowBytes();
      console.info('postgres bytes per execution row', measured);
      expect(measured.rows).toBe(2000);
      expect(measured.heapBytesPerRow).toBeLessThanOrEqual(300);
      // Line pointer, alignment and page headers come on top of the tuple itself.
      expect(measured.heapBytesPerRow).toBeGreaterThan(measured.columnBytesPerRow);
      expect(measured.liveTableBytesPerRow).toBeGreaterThan(measured.heapBytesPerRow);
    });

    it('leaves large outcomes out of the figure', async () => {
      const store = await open();
      await fill(store, 200, randomBytes(6_000).toString('base64'));
      const measured = await store.measureRowBytes();
      expect(measured.outcomeBytes).toBeGreaterThan(200 * 8_000);
      // Per row of a few pages' worth, a page's rounding would dominate heapBytesPerRow.
      expect(measured.columnBytesPerRow).toBeLessThanOrEqual(290);
      expect(measured.liveTableBytesPerRow).toBeGreaterThan(measured.heapBytesPerRow);
    });
  });

  it('audit verify passes on a journal with every task kind, and once the sweep trimmed the executions with their tasks', async () => {
    const url = await pg.freshDatabase();
    const store = await PostgresStore.open({ url });
    opened.push(store);
    const run = await journaledTaskRun(store);
    const verify = () => verifyStore({ kind: 'postgres', url }, { streams: ['activity'], heads: [] });
    const before = await verify();
    expect(before.ok).toBe(true);
    expect(before.executions).toMatchObject({ ok: true, checked: 2, journaled: 2, trimmed: 0 });

    expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(2);
    for (const taskId of run.tasks) expect(await store.getTask(taskId)).toBeUndefined();
    const after = await verify();
    expect(after.ok).toBe(true);
    expect(after.executions).toMatchObject({ ok: true, checked: 0, journaled: 2, trimmed: 2 });
  });

  it('openStore opens it from a spec or a postgres:// URL', async () => {
    const url = new URL(pg.url);
    url.searchParams.set('options', `-c search_path=${schemas.schema}`);
    const fromSpec = await openStore({ kind: 'postgres', url: pg.url, schema: schemas.schema });
    opened.push(fromSpec);
    const fromUrl = await openStore(url.toString());
    opened.push(fromUrl);
    expect([fromSpec.kind, fromUrl.kind]).toEqual(['postgres', 'postgres']);
    const input = claimInput();
    expect((await fromSpec.claim(input)).won).toBe(true);
    expect((await fromUrl.get(input.id))?.id).toBe(input.id);
  });
});
