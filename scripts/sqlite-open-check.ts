/**
 * What the SQLite store's integrity check at open costs, on a store of N
 * executions (default 100 000): `npx tsx scripts/sqlite-open-check.ts [N]`.
 * Prints the file size, PRAGMA quick_check and integrity_check times, and the
 * time of a whole SqliteStore.open (which runs integrity_check) against an
 * open without the check.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { claimInput } from '../test/support/claim-input.js';

const count = Number(process.argv[2] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), 'idem-open-check-'));
const path = join(dir, 'idem.db');
try {
  const store = await SqliteStore.open({ path });
  const built = performance.now();
  for (let i = 0; i < count; i++) {
    const claim = claimInput({ state: 'dispatched', dispatchTimeoutMs: 60_000 });
    await store.claim(claim, {
      events: [{ kind: 'received', executionId: claim.id, detail: { preview: claim.argumentsPreview } }],
    });
    await store.transition({
      id: claim.id,
      from: ['dispatched'],
      to: 'completed',
      token: claim.claimToken,
      holder: null,
      delivered: true,
      outcome: { result: { content: [{ type: 'text', text: `charged 12.00 EUR, receipt ${claim.id}` }] } },
      events: [{ kind: 'outcome', executionId: claim.id, detail: { state: 'completed' } }],
    });
  }
  await store.close();
  const buildMs = performance.now() - built;
  const bytes = statSync(path).size;
  console.log(
    `${count} executions, ${(bytes / 1024 / 1024).toFixed(1)} MiB, built in ${(buildMs / 1000).toFixed(1)} s`,
  );

  const time = (label: string, work: () => unknown, runs = 5) => {
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const start = performance.now();
      work();
      samples.push(performance.now() - start);
    }
    samples.sort((a, b) => a - b);
    console.log(
      `${label}: median ${samples[Math.floor(runs / 2)]!.toFixed(1)} ms (min ${samples[0]!.toFixed(1)}, max ${samples.at(-1)!.toFixed(1)})`,
    );
  };
  const db = new Database(path);
  time('PRAGMA quick_check', () => db.pragma('quick_check'));
  time('PRAGMA integrity_check', () => db.pragma('integrity_check'));
  time('PRAGMA integrity_check(executions)', () => db.pragma('integrity_check(executions)'));
  db.close();
  time('open + close without check (better-sqlite3, WAL pragma)', () => {
    const raw = new Database(path);
    raw.pragma('journal_mode = WAL');
    raw.close();
  });
  const opens: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    const store = await SqliteStore.open({ path });
    opens.push(performance.now() - start);
    await store.close();
  }
  opens.sort((a, b) => a - b);
  console.log(
    `SqliteStore.open (with its check): median ${opens[2]!.toFixed(1)} ms (min ${opens[0]!.toFixed(1)}, max ${opens[4]!.toFixed(1)})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
