import { MemoryStore } from './memory/index.js';
import { SqliteStore } from './sqlite/index.js';
import type { ExecutionStore } from './types.js';

export { MemoryStore } from './memory/index.js';
export { bytesPerExecutionRow, type RowBytes, SqliteStore, type SqliteStoreOptions } from './sqlite/index.js';
export type * from './types.js';

/** Which backend holds the executions; one case per folder under src/store/. */
export type StoreSpec = { kind: 'memory' } | { kind: 'sqlite'; path: string; busyTimeoutMs?: number };

export async function openStore(spec: StoreSpec): Promise<ExecutionStore> {
  switch (spec.kind) {
    case 'memory':
      return new MemoryStore();
    case 'sqlite':
      return SqliteStore.open(spec);
    default:
      return unknownKind(spec);
  }
}

function unknownKind(spec: never): never {
  throw new Error(`unknown store kind: ${(spec as { kind: string }).kind}`);
}
