import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { JournalStream } from '../journal/events.js';
import { entryLine, readExport, signedHeadLine } from '../journal/export.js';
import { signJournalHeads } from '../journal/head-signer.js';
import { PUBLIC_KEY_FILE, readSignedHeads, SIGNED_HEAD_FILE, type SignedHead } from '../journal/signing.js';
import { postgresJournalRows, sqliteJournalCount, sqliteJournalRows } from '../journal/sources.js';
import { type StoredJournalRow, type VerifyReport, verifyJournal } from '../journal/verify.js';
import { verifySqliteJournal } from '../journal/verify-parallel.js';
import { printJson } from './format.js';
import { locateStore, openLocatedStore, type StoreFlags, type StoreLocation } from './store-access.js';

/** `idem audit verify` exit codes (docs/audit.md). */
export const VERIFY_EXIT = { ok: 0, tampered: 1, error: 2 } as const;

export interface VerifyFlags extends StoreFlags {
  file?: string;
  publicKey?: string;
  head?: string;
  /** Heads shipped off the host earlier (`idem audit sign --json` output, or a journal-head.json copy). */
  heads?: string[];
  stream: JournalStream;
  json?: boolean;
}

export function registerAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('Hash-chained journals: verify offline, export, sign the head');

  audit
    .command('verify')
    .description(
      'Check a journal offline (no gateway, no fingerprint key); names the first bad seq. Exit 0 ok, 1 tampered, 2 error.',
    )
    .option(
      '--db <file|postgres-url>',
      'the store to read (default: --config, IDEM_STORE_URL, or the data directory)',
    )
    .option('-c, --config <file>', 'read the store location from an idem.yaml')
    .option('--file <export.jsonl>', 'verify an export written by `idem audit export` instead')
    .option('--public-key <pem>', 'Ed25519 public key (PEM) to check the signed head with')
    .option('--head <json>', 'signed heads file (default: journal-head.json beside the store)')
    .option('--stream <stream>', 'activity or sessions', 'activity')
    .option('--json', 'machine-readable report')
    .action(async (flags: VerifyFlags) => {
      process.exitCode = await runVerify(flags);
    });

  audit
    .command('export')
    .description('Write a journal as JSONL: the signed heads first, then one entry per line')
    .option('--db <file|postgres-url>', 'the store to read')
    .option('-c, --config <file>', 'read the store location from an idem.yaml')
    .option('-o, --out <file>', 'output file (default: stdout)')
    .option('--stream <stream>', 'activity, sessions or all', 'all')
    .action(async (flags: StoreFlags & { out?: string; stream: JournalStream | 'all' }) => {
      const location = locateStore(flags);
      const out = flags.out ? createWriteStream(flags.out) : process.stdout;
      const write = (line: string) =>
        new Promise<void>((resolve) => (out.write(`${line}\n`) ? resolve() : out.once('drain', resolve)));
      const streams: JournalStream[] = flags.stream === 'all' ? ['activity', 'sessions'] : [flags.stream];
      for (const head of headsFor(location))
        if (streams.includes(head.stream)) await write(signedHeadLine(head));
      for (const stream of streams)
        for await (const row of rowsOf(location, stream)) await write(entryLine(stream, row));
      if (flags.out) await new Promise<void>((resolve) => out.end(resolve));
    });

  audit
    .command('sign')
    .description("Sign the journals' current heads with the data directory's Ed25519 key (journal-head.json)")
    .option('--db <file|postgres-url>', 'the store to read')
    .option('-c, --config <file>', 'read the store location from an idem.yaml')
    .action(async (flags: StoreFlags) => {
      const location = locateStore(flags);
      if (!location.dataDir)
        throw new Error('no data directory to keep the key in: give --config or IDEM_DATA_DIR');
      const store = await openLocatedStore(location);
      const heads = await signJournalHeads(store, location.dataDir).finally(() => store.close());
      for (const head of heads)
        process.stdout.write(`signed ${head.stream} head: seq ${head.seq} ${head.hash}\n`);
      process.stdout.write(`public key: ${join(location.dataDir, PUBLIC_KEY_FILE)}\n`);
    });
}

/** What `idem audit verify` found, and the note on where its public key came from. */
export interface VerifyOutcome {
  source: string;
  report: VerifyReport;
  keyNote: string;
}

/** Everything `idem audit verify` checks, without the printing: the same flags, the same verdict. */
export async function verifyFromFlags(
  given: Omit<VerifyFlags, 'stream'> & { stream?: JournalStream },
): Promise<VerifyOutcome> {
  const flags = { ...given, stream: given.stream ?? 'activity' };
  let rows: AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow>;
  let heads: SignedHead[];
  let total: number | undefined;
  let sqlitePath: string | undefined;
  let source: string;
  let keyNote = '';
  let publicKeyPem = flags.publicKey ? readFileSync(flags.publicKey, 'utf8') : undefined;
  if (flags.file) {
    source = flags.file;
    const exported = await readExport(flags.file, flags.stream);
    rows = exported.rows;
    heads = flags.head ? readSignedHeads(flags.head) : exported.heads;
  } else {
    const location = locateStore(flags);
    source = location.describe;
    rows = rowsOf(location, flags.stream);
    heads = flags.head ? readSignedHeads(flags.head) : headsFor(location);
    if (location.kind === 'sqlite') {
      total = sqliteJournalCount(location.target, flags.stream);
      sqlitePath = location.target;
    }
    const besideKey = location.dataDir ? join(location.dataDir, PUBLIC_KEY_FILE) : undefined;
    if (!publicKeyPem && heads.length > 0 && besideKey && existsSync(besideKey)) {
      publicKeyPem = readFileSync(besideKey, 'utf8');
      keyNote = ` (public key from ${besideKey}: pass --public-key to check against a key you keep elsewhere)`;
    }
  }
  const signedHead = heads.find((h) => h.stream === flags.stream);
  const bar =
    !flags.json && process.stderr.isTTY && total !== undefined && total > 100_000
      ? new SingleBar({ clearOnComplete: true, stream: process.stderr })
      : undefined;
  bar?.start(total ?? 0, 0);
  const verifyOptions = {
    ...(signedHead ? { signedHead } : {}),
    ...(publicKeyPem ? { publicKeyPem } : {}),
    ...(bar ? { onProgress: (n: number) => bar.update(n) } : {}),
  };
  // A SQLite file is checked on every core (same verdict as the sequential scan, which runs on any anomaly).
  const report =
    sqlitePath !== undefined
      ? await verifySqliteJournal(sqlitePath, flags.stream, verifyOptions)
      : await verifyJournal(rows, verifyOptions);
  bar?.stop();
  return { source, report, keyNote };
}

async function runVerify(flags: VerifyFlags): Promise<number> {
  let outcome: VerifyOutcome;
  try {
    outcome = await verifyFromFlags(flags);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (flags.json) printJson({ ok: false, error: message });
    else process.stderr.write(`idem audit verify: ${message}\n`);
    return VERIFY_EXIT.error;
  }
  const { source, report, keyNote } = outcome;
  if (flags.json) printJson({ source, stream: flags.stream, ...report });
  else if (report.ok) {
    const signed = report.signedHead
      ? report.signedHead.verified
        ? `; signed head at seq ${report.signedHead.seq} verified${keyNote}`
        : `; signed head at seq ${report.signedHead.seq} NOT checked (no public key given)`
      : '; no signed head';
    process.stdout.write(
      `OK: ${report.entries} ${flags.stream} entries, chain intact up to seq ${report.lastSeq}${signed}.\n`,
    );
  } else {
    const bad = report.firstBad as NonNullable<VerifyReport['firstBad']>;
    process.stdout.write(`TAMPERED: first bad seq ${bad.seq} (${bad.problem}): ${bad.message}\n`);
  }
  return report.ok ? VERIFY_EXIT.ok : VERIFY_EXIT.tampered;
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
