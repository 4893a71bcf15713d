export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export {
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_SQLITE_SYNCHRONOUS,
  type SqliteStoreOptions,
  type SqliteSynchronous,
} from './options.js';
export { bytesPerExecutionRow, type RowBytes } from './row-bytes.js';
export { SqliteStore } from './sqlite-store.js';
