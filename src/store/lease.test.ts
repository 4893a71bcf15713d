import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresForTests, type TestPostgres } from '../../test/support/postgres.js';
import { type HolderTimes, holderGone, holderGoneSql } from './lease.js';

const NOW = 1_000_000;

/** Each time just before, at and just after `now`, and absent. */
const TIMES = [null, NOW - 1, NOW, NOW + 1] as const;
const CASES: HolderTimes[] = TIMES.flatMap((leaseExpiresAt) =>
  TIMES.map((deadlineAt) => ({ leaseExpiresAt, deadlineAt })),
);

describe('holderGone', () => {
  it('a lease or deadline that ends at now has ended; one a millisecond later has not', () => {
    expect(holderGone({ leaseExpiresAt: NOW - 1, deadlineAt: null }, NOW)).toBe(true);
    expect(holderGone({ leaseExpiresAt: NOW, deadlineAt: null }, NOW)).toBe(true);
    expect(holderGone({ leaseExpiresAt: NOW + 1, deadlineAt: null }, NOW)).toBe(false);
    expect(holderGone({ leaseExpiresAt: null, deadlineAt: null }, NOW)).toBe(true);
    expect(holderGone({ leaseExpiresAt: NOW + 1, deadlineAt: NOW }, NOW)).toBe(true);
    expect(holderGone({ leaseExpiresAt: NOW + 1, deadlineAt: NOW + 1 }, NOW)).toBe(false);
  });

  it('SQLite agrees with it on every boundary case', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE executions (lease_expires_at INTEGER, deadline_at INTEGER)');
      const gone = db.prepare<
        { lease: number | null; deadline: number | null; now: number },
        { gone: number }
      >(
        `SELECT count(*) AS gone FROM (SELECT @lease AS lease_expires_at, @deadline AS deadline_at)
         WHERE ${holderGoneSql('@now')}`,
      );
      for (const times of CASES) {
        const row = gone.get({ lease: times.leaseExpiresAt, deadline: times.deadlineAt, now: NOW });
        expect({ times, gone: row?.gone === 1 }).toEqual({ times, gone: holderGone(times, NOW) });
      }
    } finally {
      db.close();
    }
  });

  describe('PostgreSQL', () => {
    let pg: TestPostgres;
    beforeAll(async () => {
      pg = await postgresForTests();
    });
    afterAll(async () => {
      await pg?.dispose();
    });

    it('agrees with it on every boundary case', async () => {
      for (const times of CASES) {
        const { rows } = await pg.admin().query<{ gone: boolean }>(
          `WITH c AS (SELECT $3::bigint AS now),
             executions AS (SELECT $1::bigint AS lease_expires_at, $2::bigint AS deadline_at)
           SELECT EXISTS (SELECT FROM executions, c WHERE ${holderGoneSql('c.now')}) AS gone`,
          [times.leaseExpiresAt, times.deadlineAt, NOW],
        );
        expect({ times, gone: rows[0]?.gone }).toEqual({ times, gone: holderGone(times, NOW) });
      }
    });
  });
});
