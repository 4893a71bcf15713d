/**
 * The parallel verifier's unit of work (verify-parallel.ts): the rows of
 * rowid chunks of a SQLite journal, checked fast — every row's hash and the
 * links between consecutive rows — reporting each chunk's two ends so the
 * chunks can be stitched. The main thread and every worker run this loop,
 * taking the next chunk from one shared counter, so a thread that starts late
 * or runs on a busier core simply takes fewer chunks.
 *
 * It reads SQL_ENTRY_BODY — the hashed text spelled by SQLite — instead of
 * ten columns to rebuild it from: that is most of what verifying costs. It
 * only ever confirms: any doubt (a row SQLite cannot spell exactly, a stored
 * detail in another spelling, a broken link) marks the chunk anomalous and
 * the caller runs the exact sequential verifier, whose report is the answer.
 */
import Database from 'better-sqlite3';
import { SQL_ENTRY_BODY, sqlEntryBodyHash } from './chain.js';

export interface ChunkPlan {
  path: string;
  table: 'activity_journal' | 'sessions_journal';
  /** Chunk i holds rowids [firstRowid + i·chunkRowids, firstRowid + (i+1)·chunkRowids − 1], up to lastRowid. */
  firstRowid: number;
  lastRowid: number;
  chunkRowids: number;
  chunks: number;
  /** Int32 [0]: the next chunk to take; [1]: non-zero once a chunk was anomalous (everyone stops). */
  shared: SharedArrayBuffer;
  /** Report the hashes seen at these seqs (the signed heads'), where they fall in a chunk. */
  signedSeqs: number[];
}

export interface ChunkResult {
  index: number;
  count: number;
  first: { seq: number; prevHash: string } | undefined;
  last: { seq: number; hash: string } | undefined;
  /** Something is wrong inside the chunk: the exact diagnosis is left to the sequential scan. */
  anomaly: boolean;
  signedHashesSeen: [number, string][];
}

/** Rows per read: one call into SQLite per page; larger pages cost more in garbage than they save in calls. */
const PAGE_ROWS = 1024;

type BodyRow = [seq: number, prevHash: string, hash: string, body: string | null, rowid: number];

/**
 * A reader of `plan`'s chunks: each next() takes the next chunk from
 * `plan.shared` and checks it, until none is left or one was anomalous.
 */
export function openChunks(plan: ChunkPlan): { next(): ChunkResult | undefined; close(): void } {
  const state = new Int32Array(plan.shared);
  const signedSeqs = new Set(plan.signedSeqs);
  const db = new Database(plan.path, { readonly: true, fileMustExist: true });
  const page = db
    .prepare(
      `SELECT seq, prev_hash, hash, ${SQL_ENTRY_BODY}, rowid FROM ${plan.table}
       WHERE rowid BETWEEN ? AND ? ORDER BY rowid LIMIT ${PAGE_ROWS}`,
    )
    .raw(true);
  const read = (lo: number, hi: number) => page.all(lo, hi) as BodyRow[];
  return {
    next() {
      if (Atomics.load(state, 1) !== 0) return undefined;
      const index = Atomics.add(state, 0, 1);
      if (index >= plan.chunks) return undefined;
      const from = plan.firstRowid + index * plan.chunkRowids;
      const result = checkChunk(
        index,
        read,
        from,
        Math.min(plan.lastRowid, from + plan.chunkRowids - 1),
        signedSeqs,
      );
      if (result.anomaly) Atomics.store(state, 1, 1);
      return result;
    },
    close: () => db.close(),
  };
}

/** Checks chunks until none is left (or one was anomalous); returns what it checked. */
export function checkChunks(plan: ChunkPlan): ChunkResult[] {
  const chunks = openChunks(plan);
  const results: ChunkResult[] = [];
  try {
    for (let result = chunks.next(); result; result = chunks.next()) results.push(result);
  } finally {
    chunks.close();
  }
  return results;
}

function checkChunk(
  index: number,
  read: (lo: number, hi: number) => BodyRow[],
  from: number,
  to: number,
  signedSeqs: Set<number>,
): ChunkResult {
  const result: ChunkResult = {
    index,
    count: 0,
    first: undefined,
    last: undefined,
    anomaly: false,
    signedHashesSeen: [],
  };
  let lastSeq = 0;
  let lastHash = '';
  // Each page starts after the last rowid read, so a gap in the rowids costs nothing.
  for (let lo = from; lo <= to; ) {
    const rows = read(lo, to);
    for (const [seq, prevHash, hash, body, rowid] of rows) {
      lo = rowid + 1;
      if (result.count === 0) result.first = { seq, prevHash };
      else if (seq !== lastSeq + 1 || prevHash !== lastHash) result.anomaly = true;
      if (result.anomaly || body === null || sqlEntryBodyHash(body) !== hash) {
        result.anomaly = true;
        return result;
      }
      if (signedSeqs.size > 0 && signedSeqs.has(seq)) result.signedHashesSeen.push([seq, hash]);
      lastSeq = seq;
      lastHash = hash;
      result.count++;
    }
    if (rows.length < PAGE_ROWS) break;
  }
  if (result.count > 0) result.last = { seq: lastSeq, hash: lastHash };
  return result;
}
