import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../errors.js';
import { claimInput } from '../../testing/claim-input.js';
import { useSqliteFiles } from '../../testing/sqlite-files.js';
import { SqliteStore } from './sqlite-store.js';

describe('SqliteStore', () => {
  const files = useSqliteFiles();
  const { open, raw, opened } = files;

  describe('failures become StoreUnavailableError (fail closed)', () => {
    it('when the store is closed', async () => {
      const store = await open();
      await store.close();
      await expect(store.claim(claimInput())).rejects.toThrow(StoreUnavailableError);
      await expect(store.get('exe_x')).rejects.toThrow(StoreUnavailableError);
      await expect(store.close()).resolves.toBeUndefined();
    });

    it('when another process holds the write lock past the busy timeout (SQLITE_BUSY)', async () => {
      const store = await open({ busyTimeoutMs: 100 });
      const input = claimInput();
      await store.claim(input);
      const other = raw();
      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      const error = await store.claim(claimInput()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).code).toBe('IDEM_NOT_EXECUTED');
      expect(String((error as Error).cause)).toMatch(/locked|busy/i);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      // WAL: readers are not blocked by the writer.
      expect((await store.get(input.id))?.id).toBe(input.id);
      other.exec('COMMIT');
      expect((await store.claim(claimInput())).won).toBe(true);
    });

    it('when the disk is full (SQLITE_FULL)', async () => {
      await (await SqliteStore.open({ path: files.path })).close();
      const db = raw();
      opened.pop();
      const store = new SqliteStore(db);
      opened.push(store);
      const pages = db.pragma('page_count', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages}`);
      const big = 'x'.repeat(2000);
      let error: unknown;
      for (let i = 0; i < 100 && error === undefined; i++) {
        error = await store.claim(claimInput({ argumentsPreview: big })).then(
          () => undefined,
          (e: unknown) => e,
        );
      }
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(((error as Error).cause as { code: string }).code).toBe('SQLITE_FULL');
    });

    it('when the file is read-only (SQLITE_READONLY)', async () => {
      await (await SqliteStore.open({ path: files.path })).close();
      const store = new SqliteStore(new Database(files.path, { readonly: true }));
      opened.push(store);
      const error = await store.claim(claimInput()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(((error as Error).cause as { code: string }).code).toMatch(/^SQLITE_READONLY/);
      expect(await store.list()).toEqual([]);
    });

    it('when the file cannot be opened or is not a database', async () => {
      await expect(SqliteStore.open({ path: join(files.dir, 'missing', 'idem.db') })).rejects.toThrow(
        StoreUnavailableError,
      );
      writeFileSync(files.path, randomBytes(8192));
      await expect(SqliteStore.open({ path: files.path })).rejects.toThrow(StoreUnavailableError);
    });

    it('but a bug stays a bug: reusing an execution id is not "unavailable"', async () => {
      const store = await open();
      const input = claimInput();
      await store.claim(input);
      const error = await store.claim(claimInput({ id: input.id })).catch((e: unknown) => e);
      expect(error).not.toBeInstanceOf(StoreUnavailableError);
      expect((error as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    });
  });
});
