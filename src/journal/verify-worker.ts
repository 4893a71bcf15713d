/**
 * One worker of the parallel verifier: checks the rows of one rowid range of
 * a SQLite journal — every row's hash, and the links between consecutive rows
 * — and reports its two ends so the main thread can stitch the ranges.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { COLUMNS, type RawRow, toStored } from './sources.js';
import { hashMatches } from './verify.js';

export interface RangeTask {
  path: string;
  table: 'activity_journal' | 'sessions_journal';
  fromRowid: number;
  toRowid: number;
  /** Report the hashes seen at these seqs (the signed heads'), where they fall in the range. */
  signedSeqs: number[];
}

export interface RangeResult {
  count: number;
  first: { seq: number; prevHash: string } | undefined;
  last: { seq: number; hash: string } | undefined;
  /** Something is wrong inside the range: the exact diagnosis is left to the sequential scan. */
  anomaly: boolean;
  signedHashesSeen: [number, string][];
}

function checkRange(task: RangeTask): RangeResult {
  const db = new Database(task.path, { readonly: true, fileMustExist: true });
  const result: RangeResult = {
    count: 0,
    first: undefined,
    last: undefined,
    anomaly: false,
    signedHashesSeen: [],
  };
  const signedSeqs = new Set(task.signedSeqs);
  try {
    const rows = db
      .prepare(`SELECT ${COLUMNS} FROM ${task.table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid`)
      .raw(true)
      .iterate(task.fromRowid, task.toRowid) as Iterable<RawRow>;
    for (const raw of rows) {
      const row = toStored(raw);
      if (result.last && (row.seq !== result.last.seq + 1 || row.prevHash !== result.last.hash))
        result.anomaly = true;
      else if (!hashMatches(row)) result.anomaly = true;
      if (result.anomaly) break;
      result.first ??= { seq: row.seq, prevHash: row.prevHash };
      result.last = { seq: row.seq, hash: row.hash };
      if (signedSeqs.has(row.seq)) result.signedHashesSeen.push([row.seq, row.hash]);
      result.count++;
    }
  } finally {
    db.close();
  }
  return result;
}

if (parentPort) parentPort.postMessage(checkRange(workerData as RangeTask));
