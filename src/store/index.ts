import { refuseEmptyJournal, refuseMissingFile } from './lost-store.js';
import { MemoryStore } from './memory/index.js';
import { PostgresStore, type PostgresStoreOptions } from './postgres/index.js';
import { SqliteStore, type SqliteSynchronous } from './sqlite/index.js';
import type { ExecutionStore } from './types.js';

export { MemoryStore } from './memory/index.js';
export {
  bytesPerPostgresExecutionRow,
  type PostgresConnection,
  type PostgresRowBytes,
  PostgresStore,
  type PostgresStoreOptions,
} from './postgres/index.js';
export {
  bytesPerExecutionRow,
  type RowBytes,
  SqliteStore,
  type SqliteStoreOptions,
  type SqliteSynchronous,
} from './sqlite/index.js';
export type * from './types.js';

/** Which backend holds the executions; one case per folder under src/store/. */
export type StoreSpec =
  | { kind: 'memory' }
  | { kind: 'sqlite'; path: string; busyTimeoutMs?: number; synchronous?: SqliteSynchronous }
  | ({ kind: 'postgres' } & PostgresStoreOptions);

/** A spec, or a `postgres://` / `postgresql://` URL (as in IDEM_STORE_URL). */
export async function openStore(spec: StoreSpec | string): Promise<ExecutionStore> {
  if (typeof spec === 'string') return openStore(specFromUrl(spec));
  switch (spec.kind) {
    case 'memory':
      return new MemoryStore();
    case 'sqlite':
      return SqliteStore.open(spec);
    case 'postgres': {
      const { kind: _kind, ...options } = spec;
      return PostgresStore.open(options);
    }
    default:
      return unknownKind(spec);
  }
}

/**
 * Opens the store of a data directory, as the gateway and the library do at
 * start: a store that is empty or missing while the directory's signed
 * journal heads say executions were recorded is refused (StoreRefusedError
 * `lost`, lost-store.ts) — never silently begun anew.
 */
export async function openDataDirStore(spec: StoreSpec | string, dataDir: string): Promise<ExecutionStore> {
  const resolved = typeof spec === 'string' ? specFromUrl(spec) : spec;
  if (resolved.kind === 'memory') return openStore(resolved);
  if (resolved.kind === 'sqlite') refuseMissingFile(dataDir, resolved.path);
  const store = await openStore(resolved);
  try {
    await refuseEmptyJournal(
      dataDir,
      resolved.kind === 'sqlite'
        ? { kind: 'sqlite', path: resolved.path }
        : { kind: 'postgres', url: resolved.url },
      store,
    );
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

export function specFromUrl(url: string): StoreSpec {
  if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
  throw new Error(
    `not a store URL (expected postgres:// or postgresql://): ${url.replace(/:[^:@/]*@/, ':***@')}`,
  );
}

function unknownKind(spec: never): never {
  throw new Error(`unknown store kind: ${(spec as { kind: string }).kind}`);
}
