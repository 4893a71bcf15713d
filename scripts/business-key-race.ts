/**
 * npx tsx scripts/business-key-race.ts [--processes 4] [--keys 300] [--variations 4] [--store sqlite|postgres|both]
 *
 * A business key names the action, under real contention: several processes,
 * each its own actor with its own engine, share one store (a SQLite file, or a
 * PostgreSQL schema) and a `shared: true` business key. For every key each
 * process fires `--variations` concurrent calls at once — variations 0 and 1
 * are the same request in every process, the others differ in an argument — so calls
 * race within a process and across processes. Dispatches are counted on the
 * far side (an append-only log). It fails unless every key was dispatched
 * exactly once and every other call was answered IDEM_KEY_CONFLICT,
 * IDEM_IN_FLIGHT or the stored replay. The test suites run the same at small
 * counts (src/executions/business-key.test.ts, test/gateway/business-key.test.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { resolveContract } from '../src/contracts/contract.js';
import { idemCodeOf, META } from '../src/executions/answers.js';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { openStore, type StoreSpec } from '../src/store/index.js';
import { postgresForTests } from '../test/support/postgres.js';

const { values: options } = parseArgs({
  options: {
    processes: { type: 'string', default: '4' },
    keys: { type: 'string', default: '300' },
    variations: { type: 'string', default: '4' },
    store: { type: 'string', default: 'both' },
    // Worker mode (internal).
    worker: { type: 'string' },
    spec: { type: 'string' },
    dir: { type: 'string' },
  },
});

const processes = Number(options.processes);
const keys = Number(options.keys);
const variations = Number(options.variations);
const SCRIPT = fileURLToPath(import.meta.url);
const contract = resolveContract(
  { replay: 'keyed', scope: { business_key: 'order_id', shared: true }, lease: '30s' },
  undefined,
);

/** One process: its own actor and engine on the shared store; one line of tallies on stdout. */
async function worker(index: number, spec: StoreSpec, dir: string): Promise<void> {
  const store = await openStore(spec);
  const fingerprinter = new Fingerprinter(readFileSync(join(dir, 'fingerprint.key')));
  const engine = new ExecutionEngine({ store, fingerprinter });
  const log = join(dir, 'dispatches.log');
  // Start together: the parent creates `go` once every worker is up.
  writeFileSync(join(dir, `ready-${index}`), '');
  while (!existsSync(join(dir, 'go'))) await new Promise((resolve) => setTimeout(resolve, 5));
  const tally: Record<string, number> = {};
  let refsPerKey = 0;
  for (let k = 0; k < keys; k++) {
    const order = `order-${k}`;
    const answers = await Promise.all(
      Array.from({ length: variations }, (_, v) =>
        engine.execute(
          {
            tool: 'charge_card',
            channel: 'library',
            target: 'local',
            credentialRef: null,
            method: 'tools/call',
            // Variations 0 and 1 are one request (in every process); the others differ in the amount.
            arguments: { order_id: order, amount: v <= 1 ? 100 : 100 + v * 10 + index },
            contract,
            caller: { actor: `worker-${index}`, session: null },
          },
          async ({ executionId }) => {
            appendFileSync(log, `${JSON.stringify({ order, executionId, worker: index })}\n`);
            // Held a moment, so that later calls find it in flight as well as completed.
            await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
            return { content: [{ type: 'text', text: `charged ${order}` }] };
          },
        ),
      ),
    );
    for (const answer of answers) {
      const kind = idemCodeOf(answer) ?? (answer._meta?.[META.replayed] ? 'replay' : 'result');
      tally[kind] = (tally[kind] ?? 0) + 1;
    }
    if (new Set(answers.map((a) => a._meta?.[META.executionId])).size === 1) refsPerKey++;
  }
  await store.close();
  process.stdout.write(`${JSON.stringify({ tally, keysWithOneRef: refsPerKey })}\n`);
}

function run(child: ChildProcess): Promise<string> {
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`worker exited ${code}: ${err}`)),
    ),
  );
}

async function race(label: string, spec: StoreSpec): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-key-race-'));
  let children: ChildProcess[] = [];
  try {
    writeFileSync(join(dir, 'fingerprint.key'), randomBytes(32), { mode: 0o600 });
    // Migrate once before the workers open it.
    await (await openStore(spec)).close();
    children = Array.from({ length: processes }, (_, i) =>
      spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          SCRIPT,
          '--worker',
          String(i),
          '--spec',
          JSON.stringify(spec),
          '--dir',
          dir,
          '--keys',
          String(keys),
          '--variations',
          String(variations),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    );
    const outputs = children.map(run);
    // Wait until every worker has its store open, then let them all go at once.
    const deadline = Date.now() + 60_000;
    while (!Array.from({ length: processes }, (_, i) => existsSync(join(dir, `ready-${i}`))).every(Boolean)) {
      if (Date.now() > deadline) throw new Error('workers did not start within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const started = Date.now();
    writeFileSync(join(dir, 'go'), '');
    const results = (await Promise.all(outputs)).map(
      (out) => JSON.parse(out.trim()) as { tally: Record<string, number>; keysWithOneRef: number },
    );
    const ms = Date.now() - started;

    const dispatches = readFileSync(join(dir, 'dispatches.log'), 'utf8').split('\n').filter(Boolean);
    const perKey = new Map<string, number>();
    for (const line of dispatches) {
      const { order } = JSON.parse(line) as { order: string };
      perKey.set(order, (perKey.get(order) ?? 0) + 1);
    }
    const tally: Record<string, number> = {};
    for (const r of results) for (const [k, n] of Object.entries(r.tally)) tally[k] = (tally[k] ?? 0) + n;
    const calls = processes * keys * variations;
    const twice = [...perKey.values()].filter((n) => n !== 1).length;
    const unexpected = Object.keys(tally).filter(
      (k) => !['result', 'replay', 'IDEM_KEY_CONFLICT', 'IDEM_IN_FLIGHT'].includes(k),
    );
    const ok = perKey.size === keys && twice === 0 && tally.result === keys && unexpected.length === 0;
    console.log(
      `${label}: ${processes} processes × ${keys} keys × ${variations} concurrent variations = ${calls} calls in ${ms} ms` +
        ` → ${dispatches.length} dispatches for ${perKey.size} keys (keys dispatched ≠ 1 time: ${twice});` +
        ` answers ${JSON.stringify(tally)} — ${ok ? 'OK' : 'FAILED'}`,
    );
    return ok;
  } finally {
    // A worker left waiting for `go` (the parent failed first) must not outlive the run.
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

if (options.worker !== undefined) {
  await worker(Number(options.worker), JSON.parse(options.spec!) as StoreSpec, options.dir!);
} else {
  let ok = true;
  if (options.store === 'sqlite' || options.store === 'both') {
    const dir = mkdtempSync(join(tmpdir(), 'idem-key-race-db-'));
    try {
      ok = (await race('sqlite', { kind: 'sqlite', path: join(dir, 'idem.db') })) && ok;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (options.store === 'postgres' || options.store === 'both') {
    const pg = await postgresForTests();
    try {
      const { schema } = await pg.freshSchema();
      ok = (await race('postgres', { kind: 'postgres', url: pg.url, schema })) && ok;
    } finally {
      await pg.dispose();
    }
  }
  process.exitCode = ok ? 0 : 1;
}
