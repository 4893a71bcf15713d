import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { idemEnvironment } from '../environment.js';
import { messageOf } from '../errors.js';
import { loadConfig } from '../gateway/config/index.js';
import { resolveDataDir } from '../identity/data-dir.js';
import { JOURNAL_STREAMS, type JournalStream } from '../journal/events.js';
import {
  EXECUTIONS_MARKER_LINE,
  entryLine,
  executionLine,
  exportHeaderLine,
  readExport,
  readExportCoverage,
  signedHeadLine,
} from '../journal/export.js';
import { signJournalHeads } from '../journal/head-signer.js';
import {
  readHeadsFile,
  readSignedHeads,
  SIGNED_HEAD_FILE,
  type SignedHead,
  signingKeyPaths,
} from '../journal/signing.js';
import {
  postgresExecutionRows,
  postgresJournalRows,
  sqliteExecutionRows,
  sqliteJournalCount,
  sqliteJournalRows,
} from '../journal/sources.js';
import type { StoredJournalRow, VerifyReport } from '../journal/verify-report.js';
import { type JournalSource, type StoreVerifyReport, verifyStore } from '../journal/verify-store.js';
import { CHECK_EXIT } from './exit-codes.js';
import { printJson } from './format.js';
import {
  locateStore,
  openLocatedStore,
  type StoreFlags,
  type StoreLocation,
  storeOptions,
} from './store-access.js';

/** `idem audit verify` exit codes: a check's (docs/operators.md#exit-codes). */
export const VERIFY_EXIT = {
  ok: CHECK_EXIT.clean,
  tampered: CHECK_EXIT.found,
  error: CHECK_EXIT.couldNotCheck,
} as const;

export interface VerifyFlags extends StoreFlags {
  file?: string;
  publicKey?: string;
  head?: string;
  /** Heads shipped off the host earlier (`idem audit sign --json` output, or a journal-head.json copy). */
  heads?: string[];
  stream?: JournalStream | 'all';
  json?: boolean;
  /** Also write the verdict as a Prometheus text file (node_exporter's textfile collector). */
  metricsFile?: string;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('Hash-chained journals: verify offline, export, sign the head');

  storeOptions(audit.command('verify'))
    .description(
      'Check the journals and the executions table offline (no gateway, no fingerprint key); names the first bad seq or execution. Exit 0 ok, 1 tampered, 2 error.',
    )
    .option('--file <export.jsonl>', 'verify an export written by `idem audit export` instead')
    .option(
      '--public-key <pem>',
      'Ed25519 public key (PEM) to check the signed heads with; then a journal no signed head covers fails',
    )
    .option('--head <json>', 'signed heads file (default: journal-head.json beside the store)')
    .option(
      '--heads <file>',
      'heads kept off the host (`idem audit sign --json` lines, or a journal-head.json copy); repeatable',
      collect,
      [],
    )
    .option(
      '--stream <stream>',
      'activity, sessions or all (default: all; for --file, all that the export holds, and it says what it does not)',
    )
    .option('--json', 'machine-readable report')
    .option(
      '--metrics-file <file.prom>',
      "also write the verdict for node_exporter's textfile collector (idem_journal_verify_ok, …; docs/metrics.md)",
    )
    .action(async (flags: VerifyFlags) => {
      process.exitCode = await runVerify(flags);
    });

  storeOptions(audit.command('export'))
    .description(
      'Write the journals as JSONL: the signed heads first, then one entry per line, then (all streams) the executions table',
    )
    .option('-o, --out <file>', 'output file (default: stdout)')
    .option('--stream <stream>', 'activity, sessions or all', 'all')
    .action(async (flags: StoreFlags & { out?: string; stream: JournalStream | 'all' }) => {
      const location = locateStore(flags);
      const out = flags.out ? createWriteStream(flags.out) : process.stdout;
      const write = (line: string) =>
        new Promise<void>((resolve) => (out.write(`${line}\n`) ? resolve() : out.once('drain', resolve)));
      await exportStore(location, flags.stream, write);
      if (flags.out) await new Promise<void>((resolve) => out.end(resolve));
    });

  storeOptions(audit.command('sign'))
    .description(
      "Sign the journals' current heads (journal-head.json); refuses a journal shorter than, or rewritten under, its last signed head",
    )
    .option(
      '--key <file>',
      'the Ed25519 private key (default: journal_signing_key_file, IDEM_JOURNAL_SIGNING_KEY_FILE, or <data dir>/journal-signing.key)',
    )
    .option('--json', 'print the signed heads as JSON lines, to append to a file kept off the host')
    .action(async (flags: StoreFlags & { key?: string; json?: boolean }) => {
      const location = locateStore(flags);
      if (!location.dataDir)
        throw new Error('no data directory to keep the signed heads in: give --config or IDEM_DATA_DIR');
      // Signing writes the heads (and a first key pair) there: the one operator command that may create it.
      const dataDir = resolveDataDir(location.dataDir);
      const keyFile = flags.key ?? configuredKeyFile(flags);
      const store = await openLocatedStore(location);
      const heads = await signJournalHeads(store, dataDir, keyFile ? { keyFile } : {}).finally(() =>
        store.close(),
      );
      if (flags.json) {
        for (const head of heads) process.stdout.write(`${signedHeadLine(head)}\n`);
        return;
      }
      for (const head of heads)
        process.stdout.write(`signed ${head.stream} head: seq ${head.seq} ${head.hash}\n`);
      process.stdout.write(`public key: ${signingKeyPaths(dataDir, keyFile).publicPath}\n`);
    });
}

/**
 * `idem audit export`: the signed heads, the journals' rows, and — for every
 * stream — the executions table (outcomes by digest), one JSON line each.
 */
export async function exportStore(
  location: StoreLocation,
  stream: JournalStream | 'all',
  write: (line: string) => Promise<void>,
): Promise<void> {
  const streams: JournalStream[] = stream === 'all' ? [...JOURNAL_STREAMS] : [stream];
  await write(exportHeaderLine(streams, stream === 'all'));
  for (const head of headsFor(location)) if (streams.includes(head.stream)) await write(signedHeadLine(head));
  for (const s of streams) for await (const row of rowsOf(location, s)) await write(entryLine(s, row));
  if (stream !== 'all') return;
  await write(EXECUTIONS_MARKER_LINE);
  const executions =
    location.kind === 'sqlite'
      ? sqliteExecutionRows(location.target)
      : postgresExecutionRows(location.target);
  for await (const row of executions) await write(executionLine(row));
}

/** What `idem audit verify` found, and the note on where its public key came from. */
export interface VerifyOutcome {
  source: string;
  report: StoreVerifyReport;
  keyNote: string;
  streams: JournalStream[];
  /** What an export does not hold, so was not checked (a journal, the executions table): said, never passed. */
  notCovered: string[];
}

/** Everything `idem audit verify` checks, without the printing: the same flags, the same verdict. */
export async function verifyFromFlags(flags: VerifyFlags): Promise<VerifyOutcome> {
  let streams: JournalStream[] =
    !flags.stream || flags.stream === 'all' ? [...JOURNAL_STREAMS] : [flags.stream];
  const notCovered: string[] = [];
  let source: JournalSource;
  let describe: string;
  let heads: SignedHead[];
  let keyNote = '';
  let total: number | undefined;
  let publicKeyPem = flags.publicKey ? readFileSync(flags.publicKey, 'utf8') : undefined;
  if (flags.file) {
    source = { kind: 'file', path: flags.file };
    describe = flags.file;
    // An export of one stream is judged on that stream only; what it does not hold is said, not passed.
    const covered = await readExportCoverage(flags.file);
    const missing = streams.filter((s) => !covered.streams.includes(s));
    if (flags.stream && missing.length > 0)
      throw new Error(
        `${flags.file} does not hold the ${missing.join(' and ')} journal (it holds: ${covered.streams.join(', ') || 'none'})`,
      );
    streams = streams.filter((s) => covered.streams.includes(s));
    notCovered.push(...missing.map((s) => `the ${s} journal`));
    if (streams.includes('activity') && !covered.executions) notCovered.push('the executions table');
    heads = flags.head ? readSignedHeads(flags.head) : (await readExport(flags.file)).heads;
  } else {
    const location = locateStore(flags);
    describe = location.describe;
    source =
      location.kind === 'sqlite'
        ? { kind: 'sqlite', path: location.target }
        : { kind: 'postgres', url: location.target };
    heads = flags.head ? readSignedHeads(flags.head) : headsFor(location);
    if (location.kind === 'sqlite') total = sqliteJournalCount(location.target, 'activity');
    const besideKey = location.dataDir
      ? signingKeyPaths(location.dataDir, configuredKeyFile(flags)).publicPath
      : undefined;
    if (!publicKeyPem && besideKey && existsSync(besideKey)) {
      publicKeyPem = readFileSync(besideKey, 'utf8');
      keyNote = ` (public key from ${besideKey}: pass --public-key to check against a key you keep elsewhere)`;
    }
  }
  // Heads shipped off the host: every one must still match the journal (heads only move forward).
  for (const file of flags.heads ?? []) heads.push(...readHeadsFile(file));
  const bar =
    !flags.json && process.stderr.isTTY && total !== undefined && total > 100_000
      ? new SingleBar({ clearOnComplete: true, stream: process.stderr })
      : undefined;
  bar?.start(total ?? 0, 0);
  const report = await verifyStore(source, {
    streams,
    heads,
    ...(publicKeyPem ? { publicKeyPem, requireSignedHead: true } : {}),
    ...(bar ? { onProgress: (stream, n) => stream === 'activity' && bar.update(n) } : {}),
  });
  bar?.stop();
  return { source: describe, report, keyNote, streams, notCovered };
}

/** `idem audit verify`: the verdict printed, and with --metrics-file written where alerting reads it. */
async function runVerify(flags: VerifyFlags): Promise<number> {
  const started = performance.now();
  const code = await verifyAndPrint(flags);
  if (!flags.metricsFile) return code;
  const { writeVerifyMetrics } = await import('../metrics/verify-file.js');
  try {
    await writeVerifyMetrics(flags.metricsFile, {
      ok: code === VERIFY_EXIT.ok,
      finishedAt: Date.now(),
      durationSeconds: (performance.now() - started) / 1000,
    });
    return code;
  } catch (error) {
    // A clean verify whose verdict alerting cannot see is not a clean run: cron should say so.
    process.stderr.write(`idem audit verify: metrics file not written: ${messageOf(error)}\n`);
    return code === VERIFY_EXIT.ok ? VERIFY_EXIT.error : code;
  }
}

async function verifyAndPrint(flags: VerifyFlags): Promise<number> {
  let outcome: VerifyOutcome;
  try {
    outcome = await verifyFromFlags(flags);
  } catch (error) {
    const message = messageOf(error);
    if (flags.json) printJson({ ok: false, error: message });
    else process.stderr.write(`idem audit verify: ${message}\n`);
    return VERIFY_EXIT.error;
  }
  const { source, report, keyNote, streams, notCovered } = outcome;
  if (flags.json) {
    printJson({ source, stream: flags.stream ?? 'all', ...report, notCovered });
    return report.ok ? VERIFY_EXIT.ok : VERIFY_EXIT.tampered;
  }
  if (!report.ok) {
    const bad = report.firstBad as NonNullable<VerifyReport['firstBad']>;
    const where = bad.executionId
      ? `execution ${bad.executionId}`
      : `first bad seq ${bad.seq} (${bad.problem})${bad.stream ? ` in the ${bad.stream} journal` : ''}`;
    const what = bad.executionId ? ` (${bad.problem})` : '';
    process.stdout.write(`TAMPERED: ${where}${what}: ${bad.message}\n`);
    return VERIFY_EXIT.tampered;
  }
  for (const stream of streams) {
    const r = report.streams[stream] as VerifyReport;
    const signed = r.signedHead
      ? r.signedHead.verified
        ? `; signed head at seq ${r.signedHead.seq} verified${keyNote}${r.lastSeq > r.signedHead.seq ? ` (seq ${r.signedHead.seq + 1}–${r.lastSeq} are protected by the chain only)` : ''}`
        : `; signed head at seq ${r.signedHead.seq} NOT checked (no public key given)`
      : '; no signed head';
    process.stdout.write(
      `OK: ${r.entries} ${stream} entries, chain intact up to seq ${r.lastSeq}${signed}.\n`,
    );
  }
  const e = report.executions;
  if (e) {
    process.stdout.write(
      `OK: ${e.checked} executions match the journal (${e.outcomesChecked} outcomes by digest${e.outcomesUnchecked ? `, ${e.outcomesUnchecked} recorded before digests: state only` : ''}; ${e.trimmed} finished ones trimmed by retention${e.trimmedUnrecorded ? `, ${e.trimmedUnrecorded} of them before trims were journaled: by order only` : ''}).\n`,
    );
  }
  for (const what of notCovered)
    process.stdout.write(
      `NOT CHECKED: ${what}, which this export does not hold (export --stream all has it).\n`,
    );
  return VERIFY_EXIT.ok;
}

/** journal_signing_key_file of `--config`, else IDEM_JOURNAL_SIGNING_KEY_FILE. */
function configuredKeyFile(flags: StoreFlags): string | undefined {
  const configured = flags.config ? loadConfig(flags.config).journal_signing_key_file : undefined;
  return configured || idemEnvironment().journalSigningKeyFile;
}

function rowsOf(
  location: StoreLocation,
  stream: JournalStream,
): AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow> {
  return location.kind === 'sqlite'
    ? sqliteJournalRows(location.target, stream)
    : postgresJournalRows(location.target, stream);
}

function headsFor(location: StoreLocation): SignedHead[] {
  return location.dataDir ? readSignedHeads(join(location.dataDir, SIGNED_HEAD_FILE)) : [];
}
