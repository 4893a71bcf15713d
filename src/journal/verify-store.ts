import type { JournalStream } from './events.js';
import {
  checkExecutions,
  type ExecutionsReport,
  journaledExecutions,
  journaledExecutionsOf,
  type StoredExecutionRow,
} from './executions-check.js';
import { readExport, readExportExecutions } from './export.js';
import type { SignedHead } from './signing.js';
import {
  postgresExecutionRows,
  postgresJournalRows,
  postgresRegistry,
  sqliteExecutionEvents,
  sqliteExecutionRows,
  sqliteJournalRows,
} from './sources.js';
import { verifyJournal } from './verify.js';
import { verifySqliteJournal } from './verify-parallel.js';
import type { StoredJournalRow, VerifyReport } from './verify-report.js';

/** What verify reads: a SQLite file, a PostgreSQL database, or an export. */
export type JournalSource =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string }
  | { kind: 'file'; path: string };

export interface StoreVerifyOptions {
  streams: readonly JournalStream[];
  /** Every signed head known (local, and shipped off the host), of any stream. */
  heads: SignedHead[];
  publicKeyPem?: string;
  /** A public key is in use: a non-empty journal no signed head covers fails (`unsigned`). */
  requireSignedHead?: boolean;
  onProgress?: (stream: JournalStream, entries: number) => void;
}

/**
 * The report of a whole store. Its top-level `entries`, `lastSeq`,
 * `headHash` and `signedHead` are the first stream's (as when verify checked
 * one stream); `ok` and `firstBad` cover everything checked.
 */
export interface StoreVerifyReport extends VerifyReport {
  streams: Partial<Record<JournalStream, VerifyReport>>;
  /** The executions table checked against the activity journal; absent when there was none to check. */
  executions?: ExecutionsReport;
}

/**
 * Verifies a store offline — no gateway, no fingerprint key: each journal's
 * chain against every signed head known for it, then (when the activity
 * journal is intact) every execution row against the journal. Names the
 * first bad row (stream and seq) or the first bad execution.
 */
export async function verifyStore(
  source: JournalSource,
  options: StoreVerifyOptions,
): Promise<StoreVerifyReport> {
  const streams: StoreVerifyReport['streams'] = {};
  let firstBad: VerifyReport['firstBad'];
  for (const stream of options.streams) {
    const report = await verifyStream(source, stream, options);
    streams[stream] = report;
    if (!firstBad && report.firstBad) firstBad = { ...report.firstBad, stream };
  }
  const first = streams[options.streams[0] as JournalStream] as VerifyReport;
  const report: StoreVerifyReport = { ...first, ok: firstBad === undefined, streams };
  delete report.firstBad;
  if (options.streams.includes('activity') && streams.activity?.ok) {
    const rows = await executionRows(source);
    if (rows) {
      // A SQLite file: only the rows and columns the check folds (sources.ts sqliteExecutionEvents).
      const journal =
        source.kind === 'sqlite'
          ? journaledExecutionsOf(sqliteExecutionEvents(source.path))
          : await journaledExecutions(journalRows(source, 'activity'));
      report.executions = await checkExecutions(journal, rows);
      if (!firstBad && report.executions.firstBad) firstBad = report.executions.firstBad;
    }
  }
  if (firstBad) {
    report.ok = false;
    report.firstBad = firstBad;
  }
  return report;
}

async function verifyStream(
  source: JournalSource,
  stream: JournalStream,
  options: StoreVerifyOptions,
): Promise<VerifyReport> {
  const verifyOptions = {
    stream,
    signedHeads: options.heads.filter((h) => h.stream === stream),
    // PostgreSQL's own record of each writer's chain end, read before the rows.
    ...(source.kind === 'postgres' ? { registry: await postgresRegistry(source.url, stream) } : {}),
    ...(options.publicKeyPem ? { publicKeyPem: options.publicKeyPem } : {}),
    ...(options.requireSignedHead ? { requireSignedHead: true } : {}),
    ...(options.onProgress
      ? {
          onProgress: (n: number) =>
            (options.onProgress as NonNullable<typeof options.onProgress>)(stream, n),
        }
      : {}),
  };
  // A SQLite file is checked on every core (same verdict as the sequential scan, which runs on any anomaly).
  if (source.kind === 'sqlite') return verifySqliteJournal(source.path, stream, verifyOptions);
  return verifyJournal(journalRows(source, stream), verifyOptions);
}

function journalRows(
  source: JournalSource,
  stream: JournalStream,
): AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow> {
  switch (source.kind) {
    case 'sqlite':
      return sqliteJournalRows(source.path, stream);
    case 'postgres':
      return postgresJournalRows(source.url, stream);
    case 'file':
      return (async function* () {
        yield* (await readExport(source.path, stream)).rows;
      })();
  }
}

async function executionRows(
  source: JournalSource,
): Promise<AsyncIterable<StoredExecutionRow> | Iterable<StoredExecutionRow> | undefined> {
  switch (source.kind) {
    case 'sqlite':
      return sqliteExecutionRows(source.path);
    case 'postgres':
      return postgresExecutionRows(source.url);
    case 'file':
      return readExportExecutions(source.path);
  }
}
