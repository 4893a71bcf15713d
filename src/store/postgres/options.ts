// What a user gives a PostgreSQL store, in Idem's own terms: the published types reach this file,
// so it names nothing of pg's (a user without pg and @types/pg still compiles against idem).

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database?…`, as libpq and node-postgres read it. */
  url: string;
  /**
   * The schema holding Idem's tables, created if missing. Default: the
   * connection's search_path (normally `public`).
   */
  schema?: string;
  pool?: {
    /** Connections this process may open. Default 10. */
    max?: number;
    /** How long to wait for a connection (a new one, or a free one from the pool) before the store counts as unavailable. */
    connectionTimeoutMs?: number;
    /** An unused connection is closed after this long. */
    idleTimeoutMs?: number;
  };
  /**
   * The server cancels a statement that runs (or waits for a lock) longer than
   * this, and the store counts as unavailable: the engine fails closed rather
   * than hang the call.
   */
  statementTimeoutMs?: number;
  /**
   * The server ends a session that stays this long inside a transaction — a
   * process frozen halfway must not hold the journal's lock for everyone.
   */
  idleInTransactionTimeoutMs?: number;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
}

export const POSTGRES_DEFAULTS = {
  poolMax: 10,
  connectionTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  statementTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 5_000,
} as const;
