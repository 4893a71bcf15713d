export { POSTGRES_DEFAULTS, PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
export {
  bytesPerExecutionRow as bytesPerPostgresExecutionRow,
  type PostgresConnection,
  type PostgresRowBytes,
} from './row-bytes.js';
