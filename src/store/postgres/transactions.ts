import type pg from 'pg';
import { StoreUnavailableError } from '../../errors.js';
import { ignore, toStoreError } from './errors.js';
import type { Statement } from './sql.js';

/** A transaction in progress: its connection, and statements whose results wait for the COMMIT. */
export interface Transaction {
  db: pg.PoolClient;
  /** Sends ROLLBACK now, behind what was sent; nothing is committed. */
  rollback(): void;
  defer(statement: Promise<unknown>): void;
}
export type Db = pg.Pool | pg.PoolClient;

/**
 * The store's connection pool, and the one way each call uses it: a
 * statement on the pool, a transaction, or a connection of its own. Every
 * failure leaves here through toStoreError.
 */
export class Connections {
  readonly #pool: pg.Pool;
  #closed = false;

  constructor(driver: typeof pg, config: pg.PoolConfig) {
    this.#pool = new driver.Pool(config);
    // An idle connection the server drops (restart, failover) is an 'error' event; the
    // pool discards it and connects anew on next use. Unlistened, it would end the process.
    this.#pool.on('error', ignore);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  /** One statement (or a few that need no transaction) on a pooled connection. */
  async use<T>(work: (db: Db) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('the PostgreSQL store is closed');
    try {
      return await work(this.#pool);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * BEGIN, `work`, COMMIT on one connection. BEGIN goes out with `work`'s
   * first statement, and COMMIT right behind the statements `work` deferred
   * (the journal append): their results are awaited together, so a claim and
   * its events take two round trips. If a deferred statement failed, the
   * server has turned the COMMIT into a rollback, and its error is thrown.
   * `work` may roll back instead.
   */
  async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.connection(async (db) => {
      let ended = false;
      // Rejections are collected at the end; until then they must not count as unhandled.
      const pending: Promise<unknown>[] = [];
      const defer = (statement: Promise<unknown>) => {
        statement.catch(ignore);
        pending.push(statement);
      };
      defer(db.query('BEGIN'));
      const result = await work({
        db,
        rollback: () => {
          ended = true;
          defer(db.query('ROLLBACK'));
        },
        defer,
      });
      await Promise.all(ended ? pending : [...pending, db.query('COMMIT')]);
      return result;
    });
  }

  /**
   * `work` on a connection of its own. On any failure the connection is
   * discarded rather than rolled back and reused: the server rolls back what
   * it held, and a connection in an unknown state never serves another call.
   */
  async connection<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('the PostgreSQL store is closed');
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw toStoreError(error);
    }
    // Between our statements nobody else listens: a dropped connection must fail the call, not the process.
    client.on('error', ignore);
    try {
      const result = await work(client);
      client.off('error', ignore);
      client.release();
      return result;
    } catch (error) {
      client.off('error', ignore);
      client.release(true);
      throw toStoreError(error);
    }
  }
}

/** A prepared statement with its values, to run on a pool or a connection. */
export function query<R extends pg.QueryResultRow = pg.QueryResultRow>(
  statement: Statement,
  values: unknown[],
): (db: Db) => Promise<pg.QueryResult<R>> {
  return (db) => db.query<R>({ name: statement.name, text: statement.text, values });
}

/** Waits for all, in order, and returns the last: statements sent back to back share a round trip. */
export async function last<T>(before: Promise<unknown>[], final: Promise<T>): Promise<T> {
  const [result] = await Promise.all([final, ...before]);
  return result;
}
