export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export { bytesPerExecutionRow, type RowBytes } from './row-bytes.js';
export { DEFAULT_BUSY_TIMEOUT_MS, SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
