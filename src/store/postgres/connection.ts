import type pg from 'pg';
import { quoteIdent } from './migrations.js';
import { POSTGRES_DEFAULTS, type PostgresStoreOptions } from './options.js';

const QUERY_TIMEOUT_MARGIN_MS = 1_000;
export const MIGRATION_TIMEOUT_MS = 15 * 60_000;

/** What every connection of a store shares, the migration's included. */
export function connectionConfig(options: PostgresStoreOptions): pg.ClientConfig {
  return {
    connectionString: options.url,
    connectionTimeoutMillis: options.pool?.connectionTimeoutMs ?? POSTGRES_DEFAULTS.connectionTimeoutMs,
    application_name: options.applicationName ?? 'idem',
    keepAlive: true,
    options: [
      ...(options.schema === undefined ? [] : [`-c search_path=${searchPathOption(options.schema)}`]),
      // Every statement is a key lookup or an insert whose best plan never depends on the
      // values; planning it afresh each time (PostgreSQL's choice here) costs more than running it.
      '-c plan_cache_mode=force_generic_plan',
    ].join(' '),
  };
}

/** What the store's pool adds: its size and the per-call timeouts. */
export function poolConfig(
  driver: typeof pg,
  options: PostgresStoreOptions,
  connection: pg.ClientConfig,
): pg.PoolConfig {
  const statementTimeoutMs = options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs;
  return {
    ...connection,
    max: options.pool?.max ?? POSTGRES_DEFAULTS.poolMax,
    idleTimeoutMillis: options.pool?.idleTimeoutMs ?? POSTGRES_DEFAULTS.idleTimeoutMs,
    statement_timeout: statementTimeoutMs,
    // The server's timeout cannot help when the network, not the server, stopped answering:
    // then the client gives up a little later and drops the connection.
    query_timeout: statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
    idle_in_transaction_session_timeout:
      options.idleInTransactionTimeoutMs ?? POSTGRES_DEFAULTS.idleInTransactionTimeoutMs,
    // Statements of one transaction go out together instead of one round trip each.
    pipeline: true,
    types: bigintsAsNumbers(driver),
  };
}

const INT8_OID = 20;

/** bigint columns (milliseconds, seq) as numbers: all stay far below 2^53. */
function bigintsAsNumbers(driver: typeof pg): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID && format !== 'binary'
        ? (value: string) => Number(value)
        : driver.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
  };
}

/** A schema name as a `-c search_path=` startup option: quoted, with the option syntax's escapes. */
function searchPathOption(schema: string): string {
  return quoteIdent(schema).replace(/[\\ ]/g, (c) => `\\${c}`);
}
