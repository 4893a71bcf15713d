import { mkdirSync } from 'node:fs';
import envPaths from 'env-paths';

/**
 * The directory that holds the SQLite file, the fingerprint key and the journal
 * signing key: the one given (the edges pass `data_dir`, else IDEM_DATA_DIR), else
 * a per-user data directory. Not created: a command that only reads
 * (`idem executions list`) must not leave one behind.
 */
export function dataDirPath(explicit?: string): string {
  return explicit ?? envPaths('idem', { suffix: '' }).data;
}

/**
 * The data directory, created 0700 when missing, for what writes into it (the
 * gateway, the library, the demo): the keys inside are what make fingerprints
 * unforgeable.
 */
export function resolveDataDir(explicit?: string): string {
  const dir = dataDirPath(explicit);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
