import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach } from 'vitest';
import { SqliteStore, type SqliteStoreOptions } from '../store/sqlite/index.js';

/** A folder of its own, for a store file and whatever SQLite puts beside it. */
export function tempSqliteDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What useSqliteFiles gives a test: its own file, and handles closed after it. */
export interface SqliteFiles {
  /** This test's folder (removed after it). */
  readonly dir: string;
  /** `idem.db` in it, not yet created. */
  readonly path: string;
  /** Stores and connections to close after the test, in the order they were opened. */
  readonly opened: { close(): unknown }[];
  /** A SqliteStore on this test's file, closed after the test. */
  open(options?: Partial<SqliteStoreOptions>): Promise<SqliteStore>;
  /** A connection of the test's own to the file, beside the store's, closed after the test. */
  raw(options?: Database.Options): Database.Database;
}

/**
 * For the tests of one describe block: a fresh folder and file per test, and
 * every store and connection the test opened closed before the folder goes.
 */
export function useSqliteFiles(): SqliteFiles {
  let tmp: ReturnType<typeof tempSqliteDir> | undefined;
  const opened: { close(): unknown }[] = [];
  const current = () => {
    if (!tmp) throw new Error('useSqliteFiles: used outside a test');
    return tmp;
  };
  beforeEach(() => {
    tmp = tempSqliteDir();
  });
  afterEach(async () => {
    for (const handle of opened.splice(0)) await handle.close();
    current().remove();
    tmp = undefined;
  });
  return {
    get dir() {
      return current().dir;
    },
    get path() {
      return join(current().dir, 'idem.db');
    },
    opened,
    async open(options = {}) {
      const store = await SqliteStore.open({ path: join(current().dir, 'idem.db'), ...options });
      opened.push(store);
      return store;
    },
    raw(options) {
      const db = new Database(join(current().dir, 'idem.db'), options);
      opened.push(db);
      return db;
    },
  };
}
