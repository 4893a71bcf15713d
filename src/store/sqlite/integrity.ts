import Database from 'better-sqlite3';
import { messageOf, type StoreRefusalReason, StoreRefusedError } from '../../errors.js';

/** How many of integrity_check's findings a refusal quotes; the rest are in `sqlite3 <file> 'PRAGMA integrity_check'`. */
const FINDINGS_QUOTED = 3;

/**
 * Reads every page of the file once and refuses the store when anything is
 * wrong: b-tree structure, page and cell bounds, the free list, and — what
 * the cheaper quick_check leaves out — that every index entry matches its
 * row. A damaged entry in the index that finds an earlier execution by its
 * fingerprint passes quick_check and makes the next repeat dispatch again
 * (scripts/sqlite-damage.ts counts such cases). About 0.9 s per 100 000
 * executions (quick_check: 0.6 s; scripts/sqlite-open-check.ts), paid once
 * per open: without it a damaged file is used until a read happens to touch
 * the damage, and new claims keep dispatching while old ones cannot be found.
 */
export function checkIntegrity(db: Database.Database): void {
  const findings = (db.pragma('integrity_check') as { integrity_check: string }[]).map((row) =>
    row.integrity_check.replace(/\s*\n\s*/g, ' '),
  );
  if (findings.length === 1 && findings[0] === 'ok') return;
  const shown = findings.slice(0, FINDINGS_QUOTED).join('; ');
  const more = findings.length > FINDINGS_QUOTED ? ` (and ${findings.length - FINDINGS_QUOTED} more)` : '';
  throw refusal('corrupt', db.name, `failed its integrity check: ${shown}${more}`);
}

/** SQLite's or the file system's verdict on the file itself (damaged, not a database, not writable), as a refusal; else undefined. */
export function refusalFromError(error: unknown, path: string): StoreRefusedError | undefined {
  const code = error instanceof Database.SqliteError ? error.code : (error as NodeJS.ErrnoException)?.code;
  if (typeof code !== 'string') return undefined;
  const reason = REASONS.find(([pattern]) => pattern.test(code))?.[1];
  if (!reason) return undefined;
  const message = messageOf(error);
  return refusal(reason, path, message.includes(code) ? message : `${message} (${code})`, error);
}

/**
 * A stored value that no longer decodes (a flipped byte inside a result's
 * JSON): SQLite keeps no checksums, so no check at open sees it. Only what
 * reads that row is refused; the rest of the store is sound.
 */
export function undecodableValue(error: SyntaxError, path: string): StoreRefusedError {
  return refusal('corrupt', path, `a stored value cannot be decoded (${error.message})`, error);
}

/**
 * An fsync of the WAL failed. What the disk now holds of the last commits is
 * unknown (after a failed fsync the kernel may drop the pages it could not
 * write, and a later fsync can succeed without them), so, as PostgreSQL does,
 * nothing more is written through this handle: every call fails closed.
 */
export function syncFailure(path: string, error: unknown): StoreRefusedError {
  return refusal('sync_failed', path, `fsync of ${path}-wal failed (${messageOf(error)})`, error);
}

/** The file changed under the open store (file-watch.ts says how): from then on every call fails closed. */
export function fileChanged(path: string, change: string): StoreRefusedError {
  return refusal('replaced', path, `it ${change}`);
}

const REASONS: readonly [RegExp, FileRefusal][] = [
  [/^SQLITE_NOTADB/, 'not_a_database'],
  [/^SQLITE_CORRUPT/, 'corrupt'],
  [/^(SQLITE_READONLY|EACCES$|EROFS$|EPERM$)/, 'read_only'],
  [/^SQLITE_(CANTOPEN|PERM|AUTH)/, 'cannot_open'],
];

/** A damaged or inaccessible file; a lost store (lost-store.ts) says its own. */
type FileRefusal = Exclude<StoreRefusalReason, 'lost'>;

const WHAT: Record<FileRefusal, string> = {
  corrupt: 'is damaged',
  not_a_database: 'is not a SQLite database (or its header is destroyed)',
  read_only: 'cannot be written (the file or its directory is read-only)',
  cannot_open: 'cannot be opened',
  sync_failed: 'could not be synced to disk',
  replaced: 'changed under the running store',
};

/**
 * The recovery steps, in the order an operator takes them. A damaged store's
 * last dispatches may have happened without their outcome being readable, so
 * recovery ends with reviewing what was in flight rather than retrying it.
 */
function hint(reason: FileRefusal, path: string): string {
  switch (reason) {
    case 'corrupt':
    case 'not_a_database':
      return [
        `To recover: stop every gateway using it; move it aside with its -wal and -shm files`,
        `(mv ${path} ${path}.damaged; likewise ${path}-wal and ${path}-shm);`,
        `then restore a backup to ${path}, or salvage what can be read with`,
        `sqlite3 ${path}.damaged .recover | sqlite3 ${path};`,
        `then review executions that were dispatched or unknown (idem executions list --state dispatched,unknown)`,
        `before anyone repeats them. If nothing can be put back, see "A lost store" in docs/operators.md.`,
      ].join(' ');
    case 'read_only':
      return `To fix: give the user running Idem write access to ${path} and its directory (SQLite writes -wal and -shm files beside it), or point IDEM_DATA_DIR / --db elsewhere.`;
    case 'cannot_open':
      return `To fix: check that ${path} and its directory exist and are readable and writable by the user running Idem.`;
    case 'replaced':
      return [
        `To recover: stop every gateway using it; put the file back as it was (from a backup, with its -wal file)`,
        `and check it with idem audit verify --db ${path}; then start again (a store that lost what the journal`,
        `heads say was recorded is refused at start: see "A lost store" in docs/operators.md).`,
        `Review executions that were dispatched or unknown (idem executions list --state dispatched,unknown)`,
        `before anyone repeats them.`,
      ].join(' ');
    case 'sync_failed':
      return [
        `To recover: stop every gateway using it and check the disk (dmesg, df);`,
        `then start Idem again: SQLite recovers the file from what reached the disk.`,
        `Review executions that were dispatched or unknown (idem executions list --state dispatched,unknown)`,
        `before anyone repeats them.`,
      ].join(' ');
  }
}

function refusal(reason: FileRefusal, path: string, detail: string, cause?: unknown): StoreRefusedError {
  const message = `refused the SQLite store at ${path} (${reason}): the file ${WHAT[reason]}: ${detail}. Nothing was run. ${hint(reason, path)}`;
  return new StoreRefusedError(reason, path, message, cause === undefined ? undefined : { cause });
}
