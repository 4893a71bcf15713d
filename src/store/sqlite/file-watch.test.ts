import { closeSync, openSync, renameSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimInput, fillWithCompleted } from '../../../test/support/claim-input.js';
import { freshDir, removeTemporaries } from '../../../test/support/temp-dirs.js';
import { StoreRefusedError } from '../../errors.js';
import { StoreFileWatch } from './file-watch.js';
import { SqliteStore } from './sqlite-store.js';

afterAll(removeTemporaries);

/** A closed store of `count` executions, checkpointed into its file. */
async function storeFile(count = 50): Promise<string> {
  const path = join(freshDir('file-watch'), 'idem.db');
  const store = await SqliteStore.open({ path });
  await fillWithCompleted(store, count);
  await store.close();
  return path;
}

describe('StoreFileWatch', () => {
  it('is quiet while the file is the one opened, growing', async () => {
    const path = await storeFile();
    const watch = StoreFileWatch.open(path) as StoreFileWatch;
    expect(watch.check()).toBeUndefined();
    const store = await SqliteStore.open({ path });
    await fillWithCompleted(store, 200);
    await store.close();
    expect(watch.check()).toBeUndefined();
    watch.close();
  });

  it('names each change: deleted, replaced, truncated, header overwritten, shorter than its header says', async () => {
    const cases: Array<[(path: string) => void, RegExp, { shorterThanHeaderMs?: number }?]> = [
      [(path) => rmSync(path), /^was deleted$/],
      [
        (path) => {
          const other = `${path}.other`;
          closeSync(openSync(other, 'w'));
          renameSync(other, path);
        },
        /^was replaced: another file is at its path now$/,
      ],
      [(path) => truncateSync(path, 0), /^was truncated: 0 bytes, after \d+ \(SQLite never shrinks it\)$/],
      [
        (path) => {
          const fd = openSync(path, 'r+');
          writeSync(fd, Buffer.alloc(16, 0x41), 0, 16, 0);
          closeSync(fd);
        },
        /^lost its header/,
      ],
      [
        // Cut before the watch saw it longer: only the header's page count tells.
        (path) => truncateSync(path, statSync(path).size - 4096),
        /^was truncated: \d+ bytes, though its header says \d+$/,
        { shorterThanHeaderMs: 0 },
      ],
    ];
    for (const [change, said, options] of cases) {
      const path = await storeFile();
      if (options) change(path);
      const watch = StoreFileWatch.open(path, options) as StoreFileWatch;
      if (!options) change(path);
      expect(watch.check()).toMatch(said);
      watch.close();
    }
  });

  it('gives a file shorter than its header says the time a checkpoint takes to extend it', async () => {
    const path = await storeFile();
    truncateSync(path, statSync(path).size - 4096);
    let now = 0;
    const watch = StoreFileWatch.open(path, { shorterThanHeaderMs: 2_000, now: () => now }) as StoreFileWatch;
    expect(watch.check()).toBeUndefined();
    now = 1_999;
    expect(watch.check()).toBeUndefined();
    now = 2_000;
    expect(watch.check()).toMatch(/though its header says/);
    watch.close();
  });
});

describe('a SQLite store whose file is cut under it', () => {
  it('refuses the next write (reason replaced), and every call after it, until reopened', async () => {
    const path = await storeFile();
    const store = await SqliteStore.open({ path });
    await store.claim(claimInput());
    truncateSync(path, 0);
    const refused = await store.claim(claimInput()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StoreRefusedError);
    expect(refused).toMatchObject({ reason: 'replaced', path });
    expect((refused as Error).message).toContain(
      `refused the SQLite store at ${path} (replaced): the file changed under the running store: it was truncated: 0 bytes`,
    );
    await expect(store.get('exe_any')).rejects.toMatchObject({ reason: 'replaced' });
    await store.close();
  });
});
