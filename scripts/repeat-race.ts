/**
 * npx tsx scripts/repeat-race.ts [--store sqlite|postgres] [--rounds 2000] [--repeats 16] [--connections 2]
 *
 * Deliberate repeats of one ref racing through several store connections on
 * one SQLite file or one PostgreSQL schema (as gateway processes sharing one
 * truth): each round must run the action exactly twice (the call and one
 * repeat). Prints the figures; exits 1 on any violation. The tests run the
 * same at a small count (src/executions/repeat.test.ts, test/postgres/repeats.test.ts).
 * PostgreSQL: IDEM_PG_URL's server, or a throwaway one (test/support/postgres.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ExecutionStore, PostgresStore, SqliteStore } from '../src/store/index.js';
import { postgresForTests } from '../test/support/postgres.js';
import { repeatRace } from '../test/support/repeat-race.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2000' },
    repeats: { type: 'string', default: '16' },
    connections: { type: 'string', default: '2' },
    store: { type: 'string', default: 'sqlite' },
  },
});
const connections = Number(values.connections);
const dir = mkdtempSync(join(tmpdir(), 'idem-repeat-race-'));
const pg = values.store === 'postgres' ? await postgresForTests() : undefined;
try {
  const stores: ExecutionStore[] = [];
  for (let i = 0; i < connections; i++) {
    stores.push(
      pg
        ? await PostgresStore.open({ url: pg.url, schema: 'repeat_race' })
        : await SqliteStore.open({ path: join(dir, 'idem.db') }),
    );
  }
  const result = await repeatRace({
    stores,
    rounds: Number(values.rounds),
    repeatsPerRound: Number(values.repeats),
  });
  for (const store of stores) await store.close();
  console.log(
    JSON.stringify({
      ...result,
      store: values.store,
      connections,
      msPerRound: Number((result.ms / result.rounds).toFixed(3)),
    }),
  );
  process.exitCode = result.violations === 0 ? 0 : 1;
} finally {
  await pg?.dispose();
  rmSync(dir, { recursive: true, force: true });
}
