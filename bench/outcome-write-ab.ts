/**
 * Same-run A/B of the outcome's write (issue 47): the engine on a SQLite store, one call at a time,
 * alternating 400-call batches between a `keyed` tool (its answer waits for its outcome's own
 * commit: the path before issue 47) and a `status` tool (answered first, its outcome sharing the
 * next claim's commit), 6 rounds. `SYNC=normal` leaves the claim's fdatasync out.
 *
 *   SYNC=full npx tsx bench/outcome-write-ab.ts
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { libraryCall } from '../test/support/engine-setup.js';
import { drive, type Load, summarize } from './harness.js';

const store = await SqliteStore.open({
  path: join(mkdtempSync(join(tmpdir(), 'ab-')), 'f.db'),
  synchronous: (process.env.SYNC ?? 'full') as 'full' | 'normal',
});
const engine = new ExecutionEngine({ store, fingerprinter: new Fingerprinter(randomBytes(32)) });
const handler = async () => ({ content: [{ type: 'text' as const, text: 'ok' }] });
const keyedC = { replay: 'keyed', scope: { business_key: 'order_id' } } as const;
const statusC = { replay: 'status', scope: { business_key: 'order_id' } } as const;
const loads: Record<string, Load[]> = { keyed: [], status: [] };
let n = 0;
for (let round = 0; round < 6; round++) {
  for (const [name, c] of [
    ['keyed', keyedC],
    ['status', statusC],
  ] as const) {
    loads[name]!.push(
      await drive({
        calls: 400,
        concurrency: 1,
        call: () =>
          engine.execute(libraryCall(c, { order_id: `o-${n++}` }, { actor: 'a', session: 's' }), handler),
      }),
    );
  }
}
for (const [name, l] of Object.entries(loads)) {
  const s = summarize(l);
  console.log(name, 'p50', s.p50.toFixed(0), 'µs', 'calls/s', (1e6 / s.p50).toFixed(0));
}
await store.close();
