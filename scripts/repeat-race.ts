/**
 * npx tsx scripts/repeat-race.ts [--rounds 2000] [--repeats 16] [--connections 2]
 *
 * Deliberate repeats of one ref racing on one SQLite file through several
 * store connections (as gateway processes sharing a data directory): each
 * round must run the action exactly twice (the call and one repeat). Prints
 * the figures; exits 1 on any violation. The test runs the same at a small count
 * (src/executions/repeat.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SqliteStore } from '../src/store/index.js';
import { repeatRace } from '../src/testing/repeat-race.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2000' },
    repeats: { type: 'string', default: '16' },
    connections: { type: 'string', default: '2' },
  },
});
const dir = mkdtempSync(join(tmpdir(), 'idem-repeat-race-'));
try {
  const path = join(dir, 'idem.db');
  const stores = await Promise.all(
    Array.from({ length: Number(values.connections) }, () => SqliteStore.open({ path })),
  );
  const result = await repeatRace({
    stores,
    rounds: Number(values.rounds),
    repeatsPerRound: Number(values.repeats),
  });
  for (const store of stores) await store.close();
  console.log(
    JSON.stringify({
      ...result,
      connections: Number(values.connections),
      msPerRound: Number((result.ms / result.rounds).toFixed(3)),
    }),
  );
  process.exitCode = result.violations === 0 ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
