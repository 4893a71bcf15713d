import { mkdirSync } from 'node:fs';
import envPaths from 'env-paths';

/**
 * The directory that holds the SQLite file, the fingerprint key and the journal
 * signing key: `IDEM_DATA_DIR`, else a per-user data directory. Created 0700
 * because the keys inside are what make fingerprints unforgeable.
 */
export function resolveDataDir(explicit?: string): string {
  const dir = explicit ?? process.env.IDEM_DATA_DIR ?? envPaths('idem', { suffix: '' }).data;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
