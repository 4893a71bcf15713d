import { availableParallelism } from 'node:os';
import Database from 'better-sqlite3';
import { startWorkerBeside } from '../support/worker-module.js';
import { GENESIS_HASH } from './chain.js';
import type { JournalStream } from './events.js';
import { hasEventsColumn, sqliteJournalRows } from './sources.js';
import { verifyJournal } from './verify.js';
import { headsOf, type SignedHeadOptions, withSignedHead } from './verify-heads.js';
import { type ChunkPlan, type ChunkResult, openChunks } from './verify-range.js';
import type { VerifyReport } from './verify-report.js';

const TABLES = { activity: 'activity_journal', sessions: 'sessions_journal' } as const;

/** Below this many rowids, starting a worker costs more than it saves: the main thread checks them alone. */
export const PARALLEL_THRESHOLD = 200_000;

/** Rowids per chunk: small enough that threads finish together, large enough that taking one costs nothing. */
const CHUNK_ROWIDS = 16_384;
const MAX_CHUNKS = 4_096;

/**
 * Verifies a SQLite journal on every core: the main thread and a worker per
 * other core take rowid chunks from one shared counter and check them fast
 * (verify-range.ts); the main thread stitches the chunks' ends. The main
 * thread works too — on 2 cores a second worker would only compete with it —
 * and so the workers' start-up is not waited for. An intact journal is
 * confirmed this way; at the first anomaly the exact sequential scan runs,
 * so the report of a tampered journal — which seq, what is wrong — is exactly
 * the sequential verifier's.
 */
export async function verifySqliteJournal(
  path: string,
  stream: JournalStream,
  options: SignedHeadOptions & {
    workers?: number;
    /** Rowids from which workers start (default PARALLEL_THRESHOLD): tests lower it to cover them on a small file. */
    parallelFrom?: number;
    onProgress?: (entries: number) => void;
  } = {},
): Promise<VerifyReport> {
  const sequential = () => verifyJournal(sqliteJournalRows(path, stream), options);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  // Not COUNT(*): that alone reads the whole table; the two ends of the rowid index cost nothing.
  const span = db.prepare(`SELECT MIN(rowid) AS lo, MAX(rowid) AS hi FROM ${TABLES[stream]}`).get() as {
    lo: number | null;
    hi: number | null;
  };
  const hasEvents = hasEventsColumn(db, TABLES[stream]);
  db.close();
  // Rowids beyond 2^53 (only a tampered file has them) are not exact as JavaScript numbers: chunks could miss rows.
  if (!Number.isSafeInteger(span.lo) || !Number.isSafeInteger(span.hi)) return sequential();
  const lo = span.lo as number;
  const rowids = (span.hi as number) - lo + 1;
  // At most MAX_CHUNKS chunks: a file with a far-off rowid has a huge span but no more rows.
  const chunkRowids = Math.max(CHUNK_ROWIDS, Math.ceil(rowids / MAX_CHUNKS));
  const threads = Math.max(1, Math.min(options.workers ?? availableParallelism(), 8));
  const plan: ChunkPlan = {
    path,
    table: TABLES[stream],
    hasEvents,
    firstRowid: lo,
    lastRowid: span.hi as number,
    chunkRowids,
    chunks: Math.ceil(rowids / chunkRowids),
    shared: new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT),
    signedSeqs: headsOf(options).map((h) => h.seq),
  };
  const workers = Array.from(
    { length: rowids < (options.parallelFrom ?? PARALLEL_THRESHOLD) ? 0 : threads - 1 },
    () =>
      // A worker that fails leaves its chunks unchecked, which sends the verdict to the sequential scan.
      runWorker(plan).catch((): ChunkResult[] => []),
  );
  const results = [...(await checkChunksYielding(plan)), ...(await Promise.all(workers)).flat()].sort(
    (a, b) => a.index - b.index,
  );
  if (results.length !== plan.chunks) return sequential();
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
  }
  options.onProgress?.(entries);
  return withSignedHead({ entries, lastSeq: expectedSeq - 1, headHash: prevHash, signedHashesSeen }, options);
}

/**
 * The main thread's share: checkChunks, but back to the event loop between
 * chunks. A worker's start-up needs the main thread's event loop (measured
 * under tsx: without these turns, the worker took no chunk at all in half the
 * runs — it came up only after the main thread had taken them all).
 */
async function checkChunksYielding(plan: ChunkPlan): Promise<ChunkResult[]> {
  const chunks = openChunks(plan);
  const results: ChunkResult[] = [];
  try {
    for (let result = chunks.next(); result; result = chunks.next()) {
      results.push(result);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    chunks.close();
  }
  return results;
}

/** The verify worker beside this module, with its plan; settles with its chunks' results. */
function runWorker(plan: ChunkPlan): Promise<ChunkResult[]> {
  const worker = startWorkerBeside(import.meta.url, 'verify-worker', { workerData: plan });
  return new Promise((resolve, reject) => {
    worker.once('message', (results: ChunkResult[]) => resolve(results));
    worker.once('error', reject);
    // After its message this is a no-op; without one (it exited early), the promise still settles.
    worker.once('exit', (code) => reject(new Error(`verify worker exited with ${code} before its report`)));
  });
}
