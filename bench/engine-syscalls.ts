/**
 * The engine on a durable SQLite store, N calls one at a time, for a syscall count (issue 47):
 *
 *   strace -f -c -e trace=fdatasync,fsync,pwrite64,pread64,write npx tsx bench/engine-syscalls.ts
 *   BENCH_KEYED=1 …   # a `keyed` tool: its answer waits for its outcome's own commit (the old path)
 *
 * BENCH_CALLS (default 2,000). Prints the commits and syncs group commit made.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { libraryCall } from '../test/support/engine-setup.js';

const keyed = process.env.BENCH_KEYED === '1';
const calls = Number(process.env.BENCH_CALLS ?? 2_000);
const dir = mkdtempSync(join(tmpdir(), 'idem-bench-syscalls-'));
const store = await SqliteStore.open({ path: join(dir, 'store.db') });
const engine = new ExecutionEngine({ store, fingerprinter: new Fingerprinter(randomBytes(32)) });
const handler = async () => ({ content: [{ type: 'text' as const, text: 'ok' }] });
const contract = keyed ? ({ replay: 'keyed', scope: { business_key: 'order_id' } } as const) : undefined;
try {
  for (let i = 0; i < calls; i++) {
    await engine.execute(
      libraryCall(contract, { order_id: `o-${i}` }, { actor: 'local:bench', session: 's' }),
      handler,
    );
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({ calls, keyed, ...store.commitStats() }));
