import { MemoryStore } from './memory/index.js';
import { PostgresStore, type PostgresStoreOptions } from './postgres/index.js';
import { SqliteStore, type SqliteSynchronous } from './sqlite/index.js';
import type { ExecutionStore } from './types.js';

export { MemoryStore } from './memory/index.js';
export {
  bytesPerPostgresExecutionRow,
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

export function specFromUrl(url: string): StoreSpec {
  if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
  throw new Error(
    `not a store URL (expected postgres:// or postgresql://): ${url.replace(/:[^:@/]*@/, ':***@')}`,
  );
}

function unknownKind(spec: never): never {
  throw new Error(`unknown store kind: ${(spec as { kind: string }).kind}`);
}
