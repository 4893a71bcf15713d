import pgDriver from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalRequest, claimInput, deadDispatch } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { postgresForTests, type TestPostgres } from '../../../test/support/postgres.js';
import {
  claimEvents,
  until,
  usePostgresSchemas,
  wholeJournal,
} from '../../../test/support/postgres-schemas.js';
import type { ActivityEventInput } from '../../journal/events.js';
import type { TransitionInput } from '../types.js';
import { journalParams } from './journal-rows.js';
import { PostgresStore } from './postgres-store.js';
import { SQL } from './sql.js';

const LONG_MS = 10 * 60_000;

/** journal_append_rows's parameters (SQL.append) for one `attached` event of exe_1 on `chain`. */
function attachedAppend(chain: number): unknown[] {
  const events: ActivityEventInput[] = [{ kind: 'attached', executionId: 'exe_1' }];
  return ['activity', ...journalParams(events, chain)];
}

let pg: TestPostgres;
beforeAll(async () => {
  pg = await postgresForTests();
});
afterAll(async () => {
  await pg?.dispose();
});

describe('PostgresStore', () => {
  const schemas = usePostgresSchemas(() => pg);
  const { opened } = schemas;

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
        const values = attachedAppend(rows[0]!.chain);
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

  describe("a journal chain's head (journal_append_rows, migrations 7 and 8)", () => {
    it('moved by another writer after an append read it: that append fails and leaves nothing; the chain does not fork', async () => {
      const url = await pg.freshDatabase();
      const store = await PostgresStore.open({ url });
      opened.push(store);
      const [a, b] = [
        new pgDriver.Client({ connectionString: url }),
        new pgDriver.Client({ connectionString: url }),
      ];
      await a.connect();
      await b.connect();
      try {
        const { rows } = await a.query<{ chain: number }>(SQL.registerChain.text);
        const chain = rows[0]!.chain;
        const values = attachedAppend(chain);
        // b appends to the chain and holds its commit; a reads the head as it was before.
        await b.query('BEGIN');
        await b.query(SQL.append.sync.text, values);
        const appended = a.query(SQL.append.sync.text, values).then(
          () => 'appended',
          (error: Error) => error.message,
        );
        const database = new URL(url).pathname.slice(1);
        await until(async () => {
          const waiting = await pg
            .admin()
            .query(`SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`, [
              database,
            ]);
          return waiting.rows.length > 0;
        }, 10_000);
        await b.query('COMMIT');
        expect(await appended).toMatch(/moved by another writer/);
        const entries = await a.query('SELECT seq FROM activity_journal WHERE chain = $1', [chain]);
        expect(entries.rows).toHaveLength(1);
        expect(chainProblems(await wholeJournal(store))).toEqual([]);
      } finally {
        await a.end();
        await b.end();
      }
    });
  });
});
