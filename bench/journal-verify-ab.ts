/**
 * Same-process A/B of two builds of the SQLite journal verifier, for a
 * machine whose absolute times drift (bench/results/NOTES.md §2, issue 30): copy
 * dist/ aside before a change (`cp -r dist /tmp/dist-a`), `npm run build`
 * after it, then
 *
 *   npx tsx bench/journal-verify-ab.ts /tmp/dist-a dist [journal.db]
 *
 * Three series, A and B alternating, each reported as B's speed over A's:
 * SQLite's part alone (`count(SQL_HASHED_ROW)` over a range), one thread's
 * whole loop (checkChunks), both in CPU time of 16,384-row ranges taken pair
 * by pair; then the whole parallel verify. Without a file it builds one of
 * BENCH_JOURNAL_ENTRIES (default 1,000,000) entries.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import type { verifySqliteJournal } from '../src/journal/verify-parallel.js';
import type { checkChunks } from '../src/journal/verify-range.js';
import { buildJournalFile } from './journal.js';

interface Build {
  sql: string;
  checkChunks: typeof checkChunks;
  verify: typeof verifySqliteJournal;
}

const RANGE = 16_384;

async function load(dist: string): Promise<Build> {
  const url = (module: string) => pathToFileURL(resolve(dist, 'journal', module)).href;
  return {
    sql: (await import(url('chain.js'))).SQL_HASHED_ROW,
    checkChunks: (await import(url('verify-range.js'))).checkChunks,
    verify: (await import(url('verify-parallel.js'))).verifySqliteJournal,
  };
}

/** Median and quartiles of `values`, as `1.095 (1.032–1.126)`. */
function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.floor(q * (sorted.length - 1))] as number).toFixed(3);
  return `${at(0.5)} (quartiles ${at(0.25)}–${at(0.75)})`;
}

/** CPU nanoseconds per row of `run` over RANGE rows from `lo`. */
function cpuPerRow(run: (lo: number) => void, lo: number): number {
  const start = process.cpuUsage();
  run(lo);
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / RANGE;
}

/** B's speed over A's per pair, alternating which runs first; the first four pairs warm up. */
function pairs(runs: [(lo: number) => void, (lo: number) => void], ranges: number, count = 84): number[] {
  const ratios: number[] = [];
  for (let p = 0; p < count; p++) {
    const lo = 1 + ((p * 7) % ranges) * RANGE;
    const order = p % 2 ? [1, 0] : [0, 1];
    const ns: number[] = [];
    for (const i of order) ns[i] = cpuPerRow(runs[i === 0 ? 0 : 1], lo);
    if (p >= 4) ratios.push((ns[0] as number) / (ns[1] as number));
  }
  return ratios;
}

async function main(): Promise<void> {
  const [distA, distB, file] = process.argv.slice(2);
  if (!distA || !distB) throw new Error('usage: journal-verify-ab.ts <dist A> <dist B> [journal.db]');
  const dir = file ? undefined : mkdtempSync(join(tmpdir(), 'idem-bench-verify-ab-'));
  try {
    const entries = Number(process.env.BENCH_JOURNAL_ENTRIES ?? 1_000_000);
    const path = file ?? (await buildJournalFile(dir as string, entries));
    const builds = [await load(distA), await load(distB)] as const;
    const db = new Database(path, { readonly: true, fileMustExist: true });
    const total = (db.prepare('SELECT MAX(rowid) FROM activity_journal').pluck().get() as number) ?? 0;
    const ranges = Math.floor(total / RANGE);
    if (ranges < 1) throw new Error(`the journal needs at least ${RANGE} rows`);
    type Run = (lo: number) => void;
    const both = (make: (b: Build) => Run): [Run, Run] => [make(builds[0]), make(builds[1])];
    const sql = both((b) => {
      const count = db
        .prepare(`SELECT count(${b.sql}) FROM activity_journal WHERE rowid BETWEEN ? AND ?`)
        .pluck();
      return (lo) => {
        if (count.get(lo, lo + RANGE - 1) !== RANGE) throw new Error('a row was not spelled');
      };
    });
    console.log(`SQLite's part, CPU: B/A ${spread(pairs(sql, ranges))}`);
    const loop = both((b) => (lo) => {
      const [chunk] = b.checkChunks({
        path,
        table: 'activity_journal',
        firstRowid: lo,
        lastRowid: lo + RANGE - 1,
        chunkRowids: RANGE,
        chunks: 1,
        shared: new SharedArrayBuffer(8),
        signedSeqs: [],
      });
      if (!chunk || chunk.anomaly || chunk.count !== RANGE) throw new Error('a range did not verify');
    });
    console.log(`one thread's loop, CPU: B/A ${spread(pairs(loop, ranges))}`);
    db.close();
    const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 10);
    const rates: number[][] = [[], []];
    for (let r = 0; r < rounds; r++) {
      for (const i of r % 2 ? [1, 0] : [0, 1]) {
        const start = process.hrtime.bigint();
        const report = await (builds[i] as Build).verify(path, 'activity');
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        if (!report.ok) throw new Error(`verify failed: ${JSON.stringify(report)}`);
        rates[i]?.push(report.entries / seconds);
      }
    }
    const [a, b] = rates as [number[], number[]];
    const median = (v: number[]) => Math.round([...v].sort((x, y) => x - y)[v.length >> 1] as number);
    console.log(
      `whole verify, ${rounds} rounds: B/A ${spread(b.map((v, i) => v / (a[i] as number)))}; medians A ${median(a).toLocaleString('en')}, B ${median(b).toLocaleString('en')} entries/s`,
    );
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
