import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { CountingTarget } from '../../../test/support/counting-target.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import {
  postgresForTests,
  startThrowawayPostgres,
  type TestPostgres,
} from '../../../test/support/postgres.js';
import { findPostgresBinaries } from '../../../test/support/postgres-binaries.js';
import {
  claimEvents,
  until,
  usePostgresSchemas,
  wholeJournal,
} from '../../../test/support/postgres-schemas.js';
import { startTcpRelay } from '../../../test/support/tcp-relay.js';
import { sleep } from '../../../test/support/wait.js';
import { resolveContract } from '../../contracts/contract.js';
import { StoreUnavailableError } from '../../errors.js';
import { idemCodeOf } from '../../executions/answers.js';
import type { ToolCall } from '../../executions/call.js';
import { ExecutionEngine } from '../../executions/engine.js';
import { Fingerprinter } from '../../identity/fingerprint.js';
import { PostgresStore } from './postgres-store.js';

const LONG_MS = 10 * 60_000;

let pg: TestPostgres;
beforeAll(async () => {
  pg = await postgresForTests();
});
afterAll(async () => {
  await pg?.dispose();
});

describe('PostgresStore', () => {
  const schemas = usePostgresSchemas(() => pg);
  const { open, opened } = schemas;

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
        const store = await PostgresStore.open({ url: server.url, schema: schemas.schema, pool: { max: 4 } });
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
        await holder.query(`BEGIN; SELECT * FROM ${schemas.schema}.journal_head FOR UPDATE`);
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
});
