export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export { bytesPerExecutionRow, type RowBytes } from './row-bytes.js';
export {
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_SQLITE_SYNCHRONOUS,
  SqliteStore,
  type SqliteStoreOptions,
  type SqliteSynchronous,
} from './sqlite-store.js';
