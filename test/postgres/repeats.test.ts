/**
 * Deliberate repeats racing on PostgreSQL: two stores on one schema (as two
 * gateway processes sharing one truth), real concurrent transactions. Each
 * round must run the action exactly twice: the call and one repeat. Full
 * count: `npx tsx scripts/repeat-race.ts --store postgres`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/index.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { repeatRace } from '../support/repeat-race.js';

let pg: TestPostgres | undefined;
beforeAll(async () => {
  pg = await postgresForTests();
}, 120_000);
afterAll(async () => {
  await pg?.dispose();
}, 120_000);

describe('deliberate repeats on PostgreSQL', () => {
  it('racing repeats of one ref through two stores on one schema run it once', async () => {
    const db = pg as TestPostgres;
    const { schema, drop } = await db.freshSchema();
    const stores = [
      await PostgresStore.open({ url: db.url, schema }),
      await PostgresStore.open({ url: db.url, schema }),
    ];
    try {
      const result = await repeatRace({ stores, rounds: 30, repeatsPerRound: 8 });
      expect(result.violations).toBe(0);
    } finally {
      for (const store of stores) await store.close();
      await drop();
    }
  });
});
