import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postgresForTests, type TestPostgres } from '../../../test/support/postgres.js';
import { claimInput, newFingerprint } from '../../testing/claim-input.js';
import { sleep } from '../../testing/counting-target.js';
import { chainProblems } from '../../testing/journal-chains.js';
import {
  claimEvents,
  databaseNow,
  usePostgresSchemas,
  wholeJournal,
} from '../../testing/postgres-schemas.js';

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
  const { open, sql } = schemas;

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
        const t0 = await databaseNow(pg);
        const input = claimInput({ state: 'dispatched', dispatchTimeoutMs: LONG_MS, leaseMs: 600 });
        const claim = await fast.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
        const t1 = await databaseNow(pg);
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
        expect(now).toBeLessThanOrEqual(await databaseNow(pg));

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
        const r0 = await databaseNow(pg);
        expect(await slow.renewLease(input.id, input.claimToken, 500)).toBe(true);
        const r1 = await databaseNow(pg);
        const renewed = (await slow.get(input.id))!;
        expect(renewed.leaseExpiresAt).toBeGreaterThanOrEqual(r0 + 500);
        expect(renewed.leaseExpiresAt).toBeLessThanOrEqual(r1 + 500);
        expect(renewed.readAt).toBeGreaterThanOrEqual(r1);

        // Once the database's clock passes the lease, the slow gateway (whose own clock
        // says ten minutes are left) sees it expired.
        while ((await databaseNow(pg)) <= renewed.leaseExpiresAt!) await sleep(50);
        const swept = await slow.sweep({ retentionMs: LONG_MS });
        expect(swept.expired.map((r) => [r.id, r.state])).toEqual([[input.id, 'unknown']]);
        expect(swept.expired[0]!.updatedAt).toBeGreaterThan(renewed.leaseExpiresAt!);
      } finally {
        skew.mockRestore();
      }
    });
  });
});
