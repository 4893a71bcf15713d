import { randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import pgDriver from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  approvalRequest,
  claimInput,
  deadDispatch,
  newFingerprint,
} from '../../../test/support/claim-input.js';
import { CountingTarget } from '../../../test/support/counting-target.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import {
  findPostgresBinaries,
  postgresForTests,
  startTcpRelay,
  startThrowawayPostgres,
  type TestPostgres,
} from '../../../test/support/postgres.js';
import { resolveContract } from '../../contracts/contract.js';
import { StoreUnavailableError } from '../../errors.js';
import { idemCodeOf } from '../../executions/answers.js';
import { ExecutionEngine, type ToolCall } from '../../executions/engine.js';
import { Fingerprinter } from '../../identity/fingerprint.js';
import { buildEntry, envelopeTail, eventDetailText, GENESIS_HASH } from '../../journal/chain.js';
import type { ActivityEntry, ActivityEventInput } from '../../journal/events.js';
import { type RegisteredHead, verifyJournal } from '../../journal/verify.js';
import { openStore } from '../index.js';
import { describeStoreContract } from '../store.contract.js';
import type { ClaimInput, ExecutionStore, TransitionInput } from '../types.js';
import { MIGRATIONS, migrate, SCHEMA_VERSION } from './migrations.js';
import { PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
import { SQL } from './sql.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LONG_MS = 10 * 60_000;

/** The three events the engine journals with a claim. */
function claimEvents(input: ClaimInput): ActivityEventInput[] {
  return [
    {
      kind: 'received',
      executionId: input.id,
      actor: input.actor,
      tool: input.tool,
      detail: { preview: '{}' },
    },
    { kind: 'accepted', executionId: input.id },
    { kind: 'dispatched', executionId: input.id },
  ];
}

async function wholeJournal(store: ExecutionStore): Promise<ActivityEntry[]> {
  const all: ActivityEntry[] = [];
  for (;;) {
    const page = await store.readJournal(all.at(-1)?.seq ?? 0, 1000);
    if (page.length === 0) return all;
    all.push(...page);
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

let pg: TestPostgres;
beforeAll(async () => {
  pg = await postgresForTests();
});
afterAll(async () => {
  await pg?.dispose();
});

/** The database's clock, read beside the store's, to bracket what the store records. */
async function databaseNow(): Promise<number> {
  const { rows } = await pg
    .admin()
    .query<{ now: string }>('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now');
  return Number(rows[0]!.now);
}

describeStoreContract('postgres, a fresh schema per test', async () => {
  const { schema, drop } = await pg.freshSchema();
  const store = await PostgresStore.open({ url: pg.url, schema });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await drop();
    },
  };
});

describe('PostgresStore', () => {
  let schema: Awaited<ReturnType<TestPostgres['freshSchema']>>;
  const opened: ExecutionStore[] = [];

  beforeEach(async () => {
    schema = await pg.freshSchema();
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await schema.drop();
  });

  async function open(options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
    const store = await PostgresStore.open({ url: pg.url, schema: schema.schema, ...options });
    opened.push(store);
    return store;
  }

  /** The test's schema, read beside the store. */
  async function sql<R extends object>(text: string, values: unknown[] = []): Promise<R[]> {
    const client = await pg.admin().connect();
    try {
      await client.query(`SET search_path TO ${schema.schema}`);
      return (await client.query(text, values)).rows as R[];
    } finally {
      client.release();
    }
  }

  describe('schema and migrations', () => {
    it('v4 keeps a v3 journal as chain 0, which still verifies; new writes go to chains of their own after it', async () => {
      const client = await pg.admin().connect();
      let prev = GENESIS_HASH;
      try {
        await client.query(`SET search_path TO ${schema.schema}`);
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
      const rows = journal.map(({ detail, ...row }) => ({
        ...row,
        detailText: canonicalize(detail) as string,
      }));
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
      const name = `${schema.schema}_new`;
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
        await client.query(`SET search_path TO ${schema.schema}`);
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

    it('refuses a schema newer than it knows', async () => {
      await open();
      await sql("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')");
      const error = await PostgresStore.open({ url: pg.url, schema: schema.schema }).catch((e: unknown) => e);
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

  describe('several processes on one database', () => {
    it('4 stores × 250 concurrent claims of one fingerprint: exactly one winner, seen by every loser', async () => {
      const stores = await Promise.all(Array.from({ length: 4 }, () => open()));
      const fp = newFingerprint();
      const inputs = Array.from({ length: 1000 }, () => claimInput({ fingerprint: fp, state: 'dispatched' }));
      const results = await Promise.all(
        inputs.map((input, i) => stores[i % 4]!.claim(input, { events: claimEvents(input) })),
      );

      const winners = results.filter((r) => r.won);
      expect(winners).toHaveLength(1);
      const winnerId = winners[0]!.record.id;
      for (const result of results) expect(result.record?.id).toBe(winnerId);
      for (const store of stores) expect((await store.findActive(fp))?.id).toBe(winnerId);
      expect(await sql('SELECT id FROM executions')).toEqual([{ id: winnerId }]);
      const journal = await wholeJournal(stores[0]!);
      expect(journal.map((e) => e.executionId)).toEqual([winnerId, winnerId, winnerId]);
      expect(chainProblems(journal)).toEqual([]);
    });

    it('concurrent replacers in separate stores: one new holder', async () => {
      const stores = await Promise.all(Array.from({ length: 4 }, () => open()));
      const old = claimInput();
      await stores[0]!.claim(old);
      const inputs = Array.from({ length: 100 }, () => claimInput({ fingerprint: old.fingerprint }));
      const results = await Promise.all(
        inputs.map((input, i) =>
          stores[i % 4]!.claim(input, {
            replacing: old.id,
            events: [{ kind: 'accepted', executionId: input.id }],
          }),
        ),
      );
      const winners = results.filter((r) => r.won);
      expect(winners).toHaveLength(1);
      for (const result of results) expect(result.record?.id).toBe(winners[0]!.record.id);
      expect(await sql('SELECT id FROM executions WHERE active')).toEqual([{ id: winners[0]!.record.id }]);
      expect((await wholeJournal(stores[1]!)).map((e) => e.executionId)).toEqual([winners[0]!.record.id]);
    });

    it('a store registers at most one chain per pooled connection, however many writes are in flight', async () => {
      const store = await open({ pool: { max: 3 } });
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          store.appendEvents([{ kind: 'receipt_hit', requestRef: `r${i}` }]),
        ),
      );
      const chains = await store.journalChains('activity');
      expect(chains.length).toBeGreaterThanOrEqual(1);
      expect(chains.length).toBeLessThanOrEqual(3);
      const journal = await store.readJournal(0, 1000);
      expect(journal).toHaveLength(60);
      expect(chainProblems(journal)).toEqual([]);
    });

    it("each writer's chain stays valid under writers in several stores, and the registry holds every chain's end", async () => {
      const stores = await Promise.all(Array.from({ length: 4 }, () => open({ pool: { max: 4 } })));
      const perStore = 40;
      await Promise.all(
        stores.flatMap((store, s) =>
          Array.from({ length: perStore }, async (_, i) => {
            const input = claimInput({
              state: 'dispatched',
              dispatchTimeoutMs: LONG_MS,
              leaseMs: i % 5 === 0 ? 1 : LONG_MS,
            });
            const [claim] = await Promise.all([
              store.claim(input, { events: claimEvents(input) }),
              store.appendEvents([{ kind: 'session_start', requestRef: `ses_${s}_${i}` }], 'sessions'),
            ]);
            expect(claim.won).toBe(true);
            if (i % 5 === 0) {
              await store.sweep({ retentionMs: LONG_MS });
              return;
            }
            await store.transition({
              id: input.id,
              from: ['dispatched'],
              to: 'completed',
              token: input.claimToken,
              holder: null,
              outcome: { result: { content: [{ type: 'text', text: `${s}/${i}` }] } },
              delivered: i % 2 === 0,
              events: [
                { kind: 'outcome', executionId: input.id, detail: { state: 'completed' } },
                ...(i % 2 === 0 ? [{ kind: 'delivered' as const, executionId: input.id }] : []),
              ],
            });
            if (i % 2 === 1)
              await store.markDelivered(input.id, [{ kind: 'delivered', executionId: input.id }]);
            await store.appendEvents([
              { kind: 'receipt_hit', executionId: input.id, requestRef: `req:${s}:${i}` },
            ]);
          }),
        ),
      );
      const journal = await wholeJournal(stores[2]!);
      expect(chainProblems(journal)).toEqual([]);
      const expired = stores.length * (perStore / 5);
      const finished = stores.length * perStore - expired;
      // 3 per claim; per finished call: outcome, delivered, receipt_hit; one lease_expired per expired one.
      expect(journal).toHaveLength(stores.length * perStore * 3 + finished * 3 + expired);
      expect(journal.filter((e) => e.kind === 'lease_expired')).toHaveLength(expired);
      // Each writer appended to chains of its own, and the registry holds each chain's end.
      const chains = [...new Set(journal.map((e) => e.chain))];
      expect(chains.length).toBeGreaterThanOrEqual(stores.length);
      const registry = await sql<{ chain: number; seq: string; hash: string }>(
        "SELECT chain, seq, hash FROM journal_head WHERE stream = 'activity' AND seq > 0 ORDER BY chain",
      );
      expect(registry).toEqual(
        chains
          .sort((a, b) => (a ?? 0) - (b ?? 0))
          .map((chain) => {
            const end = journal.filter((e) => e.chain === chain).at(-1)!;
            return { chain, seq: String(end.seq), hash: end.hash };
          }),
      );
      const sessions = await stores[1]!.readJournal(0, 10_000, 'sessions');
      expect(chainProblems(sessions, 'sessions')).toEqual([]);
      expect(sessions).toHaveLength(stores.length * perStore);
    });
  });

  describe('clock', () => {
    it("takes every time from the database's clock, so a gateway's skewed clock neither shortens nor extends a lease", async () => {
      const processNow = Date.now.bind(Date);
      const skew = vi.spyOn(Date, 'now');
      try {
        // A gateway whose clock runs ten minutes fast.
        skew.mockImplementation(() => processNow() + LONG_MS);
        const fast = await open();
        const t0 = await databaseNow();
        const input = claimInput({ state: 'dispatched', dispatchTimeoutMs: LONG_MS, leaseMs: 600 });
        const claim = await fast.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
        const t1 = await databaseNow();
        const record = claim.record!;
        expect(record.createdAt).toBeGreaterThanOrEqual(t0);
        expect(record.createdAt).toBeLessThanOrEqual(t1);
        expect(Date.now() - record.createdAt).toBeGreaterThan(LONG_MS - 60_000);
        expect(record).toMatchObject({
          leaseExpiresAt: record.createdAt + 600,
          attachUntil: record.createdAt + 60_000,
          deadlineAt: record.createdAt + LONG_MS,
          readAt: record.createdAt,
        });
        const [entry] = await fast.readJournal();
        expect(entry!.at).toBe(record.createdAt);
        const now = await fast.now();
        expect(now).toBeGreaterThanOrEqual(t1);
        expect(now).toBeLessThanOrEqual(await databaseNow());

        // By its own clock the lease ended ten minutes ago; by the database's it is alive.
        expect((await fast.sweep({ retentionMs: LONG_MS })).expired).toEqual([]);
        const takeover = {
          id: input.id,
          from: ['dispatched' as const],
          to: 'unknown' as const,
          requireStale: true,
        };
        expect(await fast.transition(takeover)).toBeUndefined();

        // A gateway ten minutes slow renews from the database's clock, not its own.
        skew.mockImplementation(() => processNow() - LONG_MS);
        const slow = await open();
        const r0 = await databaseNow();
        expect(await slow.renewLease(input.id, input.claimToken, 500)).toBe(true);
        const r1 = await databaseNow();
        const renewed = (await slow.get(input.id))!;
        expect(renewed.leaseExpiresAt).toBeGreaterThanOrEqual(r0 + 500);
        expect(renewed.leaseExpiresAt).toBeLessThanOrEqual(r1 + 500);
        expect(renewed.readAt).toBeGreaterThanOrEqual(r1);

        // Once the database's clock passes the lease, the slow gateway (whose own clock
        // says ten minutes are left) sees it expired.
        while ((await databaseNow()) <= renewed.leaseExpiresAt!) await sleep(50);
        const swept = await slow.sweep({ retentionMs: LONG_MS });
        expect(swept.expired.map((r) => [r.id, r.state])).toEqual([[input.id, 'unknown']]);
        expect(swept.expired[0]!.updatedAt).toBeGreaterThan(renewed.leaseExpiresAt!);
      } finally {
        skew.mockRestore();
      }
    });
  });

  describe('when the database is unreachable', () => {
    const fingerprinter = new Fingerprinter(randomBytes(32));
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

    /**
     * A server this test may stop: the file's own throwaway server, or one
     * started for it; with only IDEM_PG_URL and no binaries, a relay in
     * front of that server whose connections are cut instead.
     */
    async function stoppableServer(): Promise<{
      url: string;
      schema?: string;
      stop(): Promise<void>;
      start(): Promise<void>;
      dispose(): Promise<void>;
    }> {
      if (pg.server) {
        const server = pg.server;
        return {
          url: pg.url,
          stop: () => server.stop('fast'),
          start: () => server.start(),
          dispose: async () => {},
        };
      }
      if (findPostgresBinaries()) {
        const server = await startThrowawayPostgres();
        return {
          url: server.url,
          stop: () => server.stop('fast'),
          start: () => server.start(),
          dispose: () => server.dispose(),
        };
      }
      const target = new URL(pg.url);
      const relay = await startTcpRelay({ host: target.hostname, port: Number(target.port || 5432) });
      return { url: relay.url(pg.url), stop: relay.cut, start: relay.restore, dispose: relay.close };
    }

    it('fails closed while the server is down, recovers by itself, and loses nothing committed', async () => {
      const server = await stoppableServer();
      try {
        const store = await PostgresStore.open({ url: server.url, schema: schema.schema, pool: { max: 4 } });
        opened.push(store);
        const engine = new ExecutionEngine({ store, fingerprinter });
        const target = new CountingTarget();
        expect(idemCodeOf(await engine.execute(call('before'), target.dispatch))).toBeUndefined();
        const committed = claimInput();
        await store.claim(committed, { events: claimEvents(committed) });
        const before = await store.get(committed.id);

        // Writers keep claiming through the outage, as gateways under load would.
        const won: string[] = [];
        const errors: unknown[] = [];
        let running = true;
        let wonAfterRestart = 0;
        let restarted = false;
        const writer = async () => {
          while (running) {
            const input = claimInput({ state: 'dispatched', dispatchTimeoutMs: LONG_MS });
            try {
              if ((await store.claim(input, { events: claimEvents(input) })).won) {
                won.push(input.id);
                if (restarted) wonAfterRestart++;
              }
            } catch (error) {
              errors.push(error);
              await sleep(10);
            }
          }
        };
        const writers = Array.from({ length: 4 }, writer);
        await until(() => won.length >= 20, 10_000);

        await server.stop();
        const failures = [
          store.claim(claimInput()),
          store.transition({ id: committed.id, from: ['accepted'], to: 'authorized' }),
          store.renewLease(committed.id, committed.claimToken, 1000),
          store.markDelivered(committed.id, [{ kind: 'delivered' }]),
          store.get(committed.id),
          store.findActive(committed.fingerprint),
          store.list(),
          store.appendEvents([{ kind: 'received' }]),
          store.readJournal(),
          store.sweep({ retentionMs: LONG_MS }),
          store.now(),
        ];
        for (const failure of failures) await expect(failure).rejects.toBeInstanceOf(StoreUnavailableError);
        // Before dispatch, the engine answers "not executed" and never calls the target.
        const refused = await engine.execute(call('during'), target.dispatch);
        expect(idemCodeOf(refused)).toBe('IDEM_NOT_EXECUTED');
        expect(target.invocations).toBe(1);

        await server.start();
        restarted = true;
        // The same store instance, no reopen: its pool reconnects on its own.
        await until(() => wonAfterRestart >= 20, 20_000);
        running = false;
        await Promise.all(writers);

        expect(errors.length).toBeGreaterThan(0);
        for (const error of errors) expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(await store.get(committed.id)).toEqual({ ...before, readAt: expect.any(Number) });
        for (const id of won) expect((await store.get(id))?.state).toBe('dispatched');
        // A claim that failed at COMMIT may still have committed: it is there whole or not at all.
        const executions = await store.list({ limit: 100_000 });
        const journal = await wholeJournal(store);
        expect(chainProblems(journal)).toEqual([]);
        for (const kind of ['received', 'accepted', 'dispatched'] as const) {
          expect(journal.filter((e) => e.kind === kind && e.executionId?.startsWith('exe_'))).toHaveLength(
            executions.length,
          );
        }
        expect(idemCodeOf(await engine.execute(call('during'), target.dispatch))).toBeUndefined();
        expect(target.invocations).toBe(2);
      } finally {
        await server.dispose();
      }
    });

    it('a dropped network fails calls at once, and the pool reconnects when it is back', async () => {
      const target = new URL(pg.url);
      const relay = await startTcpRelay({ host: target.hostname, port: Number(target.port || 5432) });
      try {
        const store = await open({ url: relay.url(pg.url) });
        const input = claimInput();
        await store.claim(input);
        await relay.cut();
        await expect(store.get(input.id)).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.claim(claimInput())).rejects.toBeInstanceOf(StoreUnavailableError);
        await relay.restore();
        expect((await store.get(input.id))?.id).toBe(input.id);
        expect((await store.claim(claimInput())).won).toBe(true);
      } finally {
        await relay.close();
      }
    });

    it('a network that goes silent fails calls within the timeout instead of hanging them', async () => {
      const target = new URL(pg.url);
      const relay = await startTcpRelay({ host: target.hostname, port: Number(target.port || 5432) });
      try {
        const store = await open({
          url: relay.url(pg.url),
          statementTimeoutMs: 300,
          pool: { connectionTimeoutMs: 500 },
        });
        const input = claimInput();
        await store.claim(input);
        relay.freeze();
        const started = performance.now();
        await expect(store.claim(claimInput(), { events: [{ kind: 'accepted' }] })).rejects.toBeInstanceOf(
          StoreUnavailableError,
        );
        await expect(store.get(input.id)).rejects.toBeInstanceOf(StoreUnavailableError);
        expect(performance.now() - started).toBeLessThan(5_000);
        await relay.restore();
        expect((await store.get(input.id))?.id).toBe(input.id);
      } finally {
        await relay.close();
      }
    });

    it("a transaction stuck holding the journal's lock makes writers fail, not wait forever", async () => {
      const store = await open({ statementTimeoutMs: 300 });
      await store.appendEvents([{ kind: 'received' }]);
      const holder = await pg.admin().connect();
      try {
        await holder.query(`BEGIN; SELECT * FROM ${schema.schema}.journal_head FOR UPDATE`);
        const input = claimInput();
        await expect(store.claim(input, { events: [{ kind: 'accepted' }] })).rejects.toBeInstanceOf(
          StoreUnavailableError,
        );
        // Rolled back with the journal append: the claim left nothing behind.
        expect(await store.get(input.id)).toBeUndefined();
        // Writes without events, and writes that change nothing, take no journal lock and go on.
        const other = claimInput();
        expect((await store.claim(other)).won).toBe(true);
        const lost = await store.claim(claimInput({ fingerprint: other.fingerprint }), {
          events: [{ kind: 'accepted' }],
        });
        expect(lost.record?.id).toBe(other.id);
        const refused = { id: other.id, from: ['denied' as const], to: 'completed' as const };
        expect(await store.transition({ ...refused, events: [{ kind: 'outcome' }] })).toBeUndefined();
        await store.markDelivered(input.id, [{ kind: 'delivered' }]);
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      expect((await store.claim(claimInput(), { events: [{ kind: 'accepted' }] })).won).toBe(true);
      expect(chainProblems(await wholeJournal(store))).toEqual([]);
    });

    it('cannot open: nothing listening, or no such database', async () => {
      const relay = await startTcpRelay({ host: '127.0.0.1', port: 9 });
      const url = relay.url(pg.url);
      await relay.close();
      await expect(PostgresStore.open({ url })).rejects.toBeInstanceOf(StoreUnavailableError);
      const missing = new URL(pg.url);
      missing.pathname = '/no_such_database';
      await expect(PostgresStore.open({ url: missing.toString() })).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
    });

    it('but a bug stays a bug: reusing an execution id is not "unavailable"', async () => {
      const store = await open();
      const input = claimInput();
      await store.claim(input);
      for (const events of [undefined, [{ kind: 'accepted' as const }]]) {
        const error = await store.claim(claimInput({ id: input.id }), { events }).catch((e: unknown) => e);
        expect(error).not.toBeInstanceOf(StoreUnavailableError);
        expect((error as { code?: string }).code).toBe('23505');
      }
      expect((await store.claim(claimInput())).won).toBe(true);
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

  describe('commits that need not wait for the WAL flush (src/store/durability.ts)', () => {
    /**
     * A database of its own with synchronous_commit on, as in production (the tests' server
     * runs with it off), holding a store on ONE pooled connection, and a log that a deferred
     * trigger fills at each commit with the synchronous_commit that commit runs under.
     */
    async function durableStore() {
      const url = await pg.freshDatabase();
      await pg.admin().query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} SET synchronous_commit = on`);
      const store = await PostgresStore.open({ url, pool: { max: 1 } });
      opened.push(store);
      const raw = new pgDriver.Client({ connectionString: url });
      await raw.connect();
      await raw.query(`
        CREATE TABLE commit_log (tbl text, setting text, pid int);
        CREATE FUNCTION log_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO commit_log VALUES (TG_TABLE_NAME, current_setting('synchronous_commit'), pg_backend_pid());
          RETURN NULL;
        END $$;
        CREATE CONSTRAINT TRIGGER log_commit AFTER INSERT OR UPDATE ON executions
          DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION log_commit();
        CREATE CONSTRAINT TRIGGER log_commit AFTER INSERT ON activity_journal
          DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION log_commit();`);
      const pids = new Set<number>();
      /** The synchronous_commit settings `step`'s commits ran under (deferred triggers run just before the commit). */
      const commitsOf = async (step: () => Promise<unknown>): Promise<string[]> => {
        await raw.query('DELETE FROM commit_log');
        await step();
        const { rows } = await raw.query<{ tbl: string; setting: string; pid: number }>(
          'SELECT * FROM commit_log',
        );
        for (const row of rows) pids.add(row.pid);
        return [...new Set(rows.map((row) => row.setting))];
      };
      return { store, raw, commitsOf, pids };
    }

    it("the holder's outcome, a delivery and events alone commit with synchronous_commit off; the next claim on the same connection, and every other write, with it on", async () => {
      const { store, raw, commitsOf, pids } = await durableStore();
      try {
        const a = claimInput({ state: 'dispatched', dispatchTimeoutMs: LONG_MS });
        expect(await commitsOf(() => store.claim(a, { events: claimEvents(a) }))).toEqual(['on']);
        const outcome: TransitionInput = {
          id: a.id,
          from: ['dispatched'],
          to: 'completed',
          token: a.claimToken,
          holder: null,
          outcome: { result: { content: [{ type: 'text', text: 'charged' }] } },
          events: [{ kind: 'outcome', executionId: a.id, detail: { state: 'completed' } }],
        };
        expect(await commitsOf(() => store.transition(outcome))).toEqual(['off']);
        // Right after, on the pool's only connection: the setting ended with the outcome's transaction.
        const b = claimInput({ state: 'dispatched', dispatchTimeoutMs: LONG_MS });
        expect(await commitsOf(() => store.claim(b, { events: claimEvents(b) }))).toEqual(['on']);
        expect(
          await commitsOf(() => store.markDelivered(a.id, [{ kind: 'delivered', executionId: a.id }])),
        ).toEqual(['off']);
        expect(await commitsOf(() => store.appendEvents([{ kind: 'attached', executionId: a.id }]))).toEqual([
          'off',
        ]);

        // A move that lets something go ahead, by the holder or not, waits for the flush.
        const c = claimInput();
        expect(await commitsOf(() => store.claim(c))).toEqual(['on']);
        const dispatch = {
          id: c.id,
          from: ['accepted' as const],
          to: 'dispatched' as const,
          token: c.claimToken,
        };
        expect(await commitsOf(() => store.transition({ ...dispatch, dispatchTimeoutMs: LONG_MS }))).toEqual([
          'on',
        ]);
        const probe = { id: b.id, from: ['dispatched' as const], to: 'unknown' as const };
        expect(
          await commitsOf(() =>
            store.transition({ ...probe, events: [{ kind: 'outcome', executionId: b.id }] }),
          ),
        ).toEqual(['on']);
        const resolve = {
          id: b.id,
          from: ['unknown' as const],
          to: 'failed' as const,
          note: 'resolved by hand',
        };
        expect(await commitsOf(() => store.transition(resolve))).toEqual(['on']);

        // An approval decision and the sweep append their events in a transaction that must sync.
        const d = claimInput({ state: 'awaiting_approval', approval: approvalRequest() });
        expect(await commitsOf(() => store.claim(d))).toEqual(['on']);
        const decide = () =>
          store.decideApproval({
            id: d.id,
            decision: 'approved',
            by: 'operator:bob',
            via: 'cli',
            events: [{ kind: 'authorized', executionId: d.id }],
          });
        expect(await commitsOf(decide)).toEqual(['on']);
        const dead = deadDispatch();
        await store.claim(dead);
        const leaseEnds = (await store.get(dead.id))!.leaseExpiresAt!;
        await until(async () => (await store.now()) > leaseEnds, 10_000);
        expect(await commitsOf(() => store.sweep({ retentionMs: LONG_MS }))).toEqual(['on']);

        expect(pids.size).toBe(1);
      } finally {
        await raw.end();
      }
    });

    it('a lazy statement sets synchronous_commit off for its own transaction only; the session keeps on', async () => {
      const { store, raw } = await durableStore();
      try {
        const { rows } = await raw.query<{ chain: number }>(SQL.registerChain.text);
        const events: ActivityEventInput[] = [{ kind: 'attached', executionId: 'exe_1' }];
        const values = [
          'activity',
          rows[0]!.chain,
          ['attached'],
          ['exe_1'],
          [null],
          [null],
          [null],
          events.map(eventDetailText),
          events.map(envelopeTail),
        ];
        const show = async () =>
          (await raw.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!
            .synchronous_commit;
        const inTransaction = async (text: string) => {
          await raw.query('BEGIN');
          await raw.query(text, values);
          const setting = await show();
          await raw.query('ROLLBACK');
          return setting;
        };
        expect(await inTransaction(SQL.append.lazy.text)).toBe('off');
        expect(await show()).toBe('on');
        expect(await inTransaction(SQL.append.sync.text)).toBe('on');
        // Alone (autocommit), as the store runs it: it commits, and the session's setting is untouched.
        await raw.query(SQL.append.lazy.text, values);
        expect(await show()).toBe('on');
        expect((await store.readJournal()).map((e) => e.kind)).toEqual(['attached']);
      } finally {
        await raw.end();
      }
    });
  });

  it('openStore opens it from a spec or a postgres:// URL', async () => {
    const url = new URL(pg.url);
    url.searchParams.set('options', `-c search_path=${schema.schema}`);
    const fromSpec = await openStore({ kind: 'postgres', url: pg.url, schema: schema.schema });
    opened.push(fromSpec);
    const fromUrl = await openStore(url.toString());
    opened.push(fromUrl);
    expect([fromSpec.kind, fromUrl.kind]).toEqual(['postgres', 'postgres']);
    const input = claimInput();
    expect((await fromSpec.claim(input)).won).toBe(true);
    expect((await fromUrl.get(input.id))?.id).toBe(input.id);
  });
});
