import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { GENESIS_HASH } from './chain.js';
import type { JournalStream } from './events.js';
import { sqliteJournalRows } from './sources.js';
import {
  headsOf,
  type SignedHeadOptions,
  type VerifyReport,
  verifyJournal,
  withSignedHead,
} from './verify.js';
import type { RangeResult, RangeTask } from './verify-worker.js';

const TABLES = { activity: 'activity_journal', sessions: 'sessions_journal' } as const;

/** Below this many rows, starting workers costs more than it saves. */
export const PARALLEL_THRESHOLD = 200_000;

/**
 * Verifies a SQLite journal on every core: each worker checks one rowid range
 * (hashes and links), the main thread stitches the ranges' ends. An intact
 * journal is confirmed this way; at the first anomaly the exact sequential
 * scan runs, so the report of a tampered journal — which seq, what is wrong —
 * is exactly the sequential verifier's.
 */
export async function verifySqliteJournal(
  path: string,
  stream: JournalStream,
  options: SignedHeadOptions & {
    workers?: number;
    onProgress?: (entries: number) => void;
  } = {},
): Promise<VerifyReport> {
  const sequential = () => verifyJournal(sqliteJournalRows(path, stream), options);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const span = db
    .prepare(`SELECT MIN(rowid) AS lo, MAX(rowid) AS hi, COUNT(*) AS n FROM ${TABLES[stream]}`)
    .get() as { lo: number | null; hi: number | null; n: number };
  db.close();
  const workers = Math.max(1, Math.min(options.workers ?? availableParallelism(), 8));
  if (span.n < PARALLEL_THRESHOLD || workers === 1 || span.lo === null || span.hi === null)
    return sequential();

  const size = Math.ceil((span.hi - span.lo + 1) / workers);
  const tasks: RangeTask[] = Array.from({ length: workers }, (_, i) => ({
    path,
    table: TABLES[stream],
    fromRowid: (span.lo as number) + i * size,
    toRowid: Math.min(span.hi as number, (span.lo as number) + (i + 1) * size - 1),
    signedSeqs: headsOf(options).map((h) => h.seq),
  }));
  const results = await Promise.all(tasks.map(runWorker));
  let expectedSeq = 1;
  let prevHash = GENESIS_HASH;
  let entries = 0;
  const signedHashesSeen = new Map<number, string>();
  for (const r of results) {
    if (r.anomaly) return sequential();
    if (r.count === 0) continue;
    if (r.first?.seq !== expectedSeq || r.first.prevHash !== prevHash) return sequential();
    expectedSeq = (r.last?.seq as number) + 1;
    prevHash = r.last?.hash as string;
    entries += r.count;
    for (const [seq, hash] of r.signedHashesSeen) signedHashesSeen.set(seq, hash);
    options.onProgress?.(entries);
  }
  return withSignedHead({ entries, lastSeq: expectedSeq - 1, headHash: prevHash, signedHashesSeen }, options);
}

/** The worker module beside this one: TypeScript under tsx (tests), JavaScript from dist/. */
function runWorker(task: RangeTask): Promise<RangeResult> {
  const here = new URL(import.meta.url);
  const ts = here.pathname.endsWith('.ts');
  const entry = new URL(`./verify-worker.${ts ? 'ts' : 'js'}`, here);
  // Under tsx (tests, development) the worker registers tsx itself: loader flags do not reach workers.
  const worker = ts
    ? new Worker(
        `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
        {
          eval: true,
          workerData: task,
        },
      )
    : new Worker(entry, { workerData: task });
  return new Promise((resolve, reject) => {
    worker.once('message', (result: RangeResult) => resolve(result));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`verify worker exited with ${code}`));
    });
  });
}
