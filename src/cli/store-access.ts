import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { SQLITE_STORE_FILE } from '../defaults.js';
import { idemEnvironment } from '../environment.js';
import { loadConfig } from '../gateway/config/index.js';
import { dataDirPath } from '../identity/data-dir.js';
import { openStore } from '../store/index.js';
import type { ExecutionStore } from '../store/types.js';

/** Where the operator commands find the store. */
export interface StoreLocation {
  /** `sqlite:<path>` or a postgres URL, for messages. */
  describe: string;
  kind: 'sqlite' | 'postgres';
  /** SQLite file path or postgres URL. */
  target: string;
  /** The data directory beside it (signing keys, signed heads). */
  dataDir: string | undefined;
}

export interface StoreFlags {
  db?: string;
  config?: string;
}

/**
 * `--db` and `--config`, the options that say where the store is: declared here once, with one
 * help text, for every command that opens the store (locateStore reads them).
 */
export function storeOptions(command: Command): Command {
  return command
    .option(
      '--db <file|postgres-url>',
      'the store: a SQLite file or a postgres:// URL (default: --config, IDEM_STORE_URL, or the data directory)',
    )
    .option('-c, --config <file>', "an idem.yaml to read the store's location from");
}

/**
 * `--db <file|postgres-url>`, else the store of `--config idem.yaml`, else
 * IDEM_STORE_URL, else `<IDEM_DATA_DIR or per-user dir>/idem.db`. A SQLite
 * file that does not exist is an error: operator commands never create a store,
 * nor the data directory it would be in (except `idem store new`, which is told `missingOk`).
 */
export function locateStore(flags: StoreFlags, { missingOk = false } = {}): StoreLocation {
  const pick = (target: string, dataDir: string | undefined): StoreLocation =>
    /^postgres(ql)?:\/\//i.test(target)
      ? { describe: target.replace(/\/\/[^@/]*@/, '//***@'), kind: 'postgres', target, dataDir }
      : { describe: `sqlite:${target}`, kind: 'sqlite', target, dataDir: dataDir ?? dirname(target) };
  let location: StoreLocation;
  if (flags.db) location = pick(flags.db, undefined);
  else if (flags.config) {
    const config = loadConfig(flags.config);
    const dataDir = dataDirPath(config.data_dir ?? idemEnvironment().dataDir);
    if (config.store?.kind === 'postgres') location = pick(config.store.url, dataDir);
    else if (config.store?.kind === 'memory')
      throw new Error('the config uses the memory store: nothing persists to inspect');
    else location = pick(config.store?.path ?? join(dataDir, SQLITE_STORE_FILE), dataDir);
  } else if (idemEnvironment().storeUrl)
    location = pick(idemEnvironment().storeUrl as string, idemEnvironment().dataDir);
  else {
    const dataDir = dataDirPath(idemEnvironment().dataDir);
    location = pick(join(dataDir, SQLITE_STORE_FILE), dataDir);
  }
  if (location.kind === 'sqlite' && !missingOk && !existsSync(location.target)) {
    throw new Error(
      `no store at ${location.target} (give --db <file|postgres-url>, --config, or IDEM_DATA_DIR)`,
    );
  }
  return location;
}

export function openLocatedStore(location: StoreLocation): Promise<ExecutionStore> {
  return openStore(
    location.kind === 'postgres' ? location.target : { kind: 'sqlite', path: location.target },
  );
}
