export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export { POSTGRES_DEFAULTS, PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
export { bytesPerExecutionRow as bytesPerPostgresExecutionRow, type PostgresRowBytes } from './row-bytes.js';
