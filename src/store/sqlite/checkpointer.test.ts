import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { PATIENTLY } from '../../../test/support/wait.js';
import {
  BACKSTOP_AUTOCHECKPOINT_PAGES,
  type CheckpointerOptions,
  DEFAULT_AUTOCHECKPOINT_PAGES,
  startCheckpointWorker,
} from './checkpointer.js';
import { SqliteStore } from './sqlite-store.js';

/**
 * The checkpoint worker (checkpointer.ts) on a real file: it starts after
 * enough commits, copies the log back from its own thread, hands SQLite's
 * autocheckpoint back if it dies, and close() waits for it.
 */

let dir: string;
let path: string;
const opened: SqliteStore[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'idem-checkpointer-'));
  path = join(dir, 'idem.db');
});

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The store with a worker that starts after `startAfterCommits`, and the worker threads it started. */
async function openWatched(options: CheckpointerOptions & { path?: string } = {}) {
  const workers: Worker[] = [];
  const store = await SqliteStore.open({
    path: options.path ?? path,
    // 'normal': the store's thread never checkpoints to sync lazy commits (group-commit.ts), so
    // every checkpoint seen here is the worker's.
    synchronous: 'normal',
    checkpoints: {
      intervalMs: 10,
      startWorker: (plan) => {
        const worker = startCheckpointWorker(plan);
        workers.push(worker);
        return worker;
      },
      ...options,
    },
  });
  opened.push(store);
  return { store, workers };
}

async function claims(store: SqliteStore, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const input = claimInput();
    await store.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
    ids.push(input.id);
  }
  return ids;
}

/**
 * The WAL index's own header, read from the -shm file without a connection (which would
 * checkpoint): frames in the log (mxFrame, offset 16) and frames copied back into the database
 * (nBackfill, offset 96), native byte order (https://www.sqlite.org/walformat.html).
 */
function walIndex(): { frames: number; backfilled: number } {
  const shm = readFileSync(`${path}-shm`);
  const read = (offset: number) =>
    endianness() === 'LE' ? shm.readUInt32LE(offset) : shm.readUInt32BE(offset);
  return { frames: read(16), backfilled: read(96) };
}

const running = (store: SqliteStore) => () => expect(store.checkpointStats().state).toBe('running');

describe('the checkpoint worker', () => {
  it('starts after enough commits and copies the log back from its own thread; without it, nothing is copied', async () => {
    const { store, workers } = await openWatched({ startAfterCommits: 20 });
    await claims(store, 19);
    expect(workers).toHaveLength(0);
    expect(store.checkpointStats()).toMatchObject({ state: 'waiting', checkpoints: 0 });
    // Under 1,000 pages, SQLite's autocheckpoint has not run: the log holds every commit.
    expect(walIndex().backfilled).toBe(0);
    const fileBefore = statSync(path).size;

    await claims(store, 1);
    expect(workers).toHaveLength(1);
    await vi.waitFor(running(store), { timeout: 20_000 });
    expect(store.checkpointStats().autocheckpointPages).toBe(BACKSTOP_AUTOCHECKPOINT_PAGES);
    await claims(store, 5);
    await vi.waitFor(
      () => {
        const { frames, backfilled } = walIndex();
        expect(frames).toBeGreaterThan(0);
        expect(backfilled).toBe(frames);
      },
      { timeout: 10_000 },
    );
    const stats = store.checkpointStats();
    expect(stats.checkpoints).toBeGreaterThanOrEqual(1);
    expect(stats.lastCheckpointed).toBe(stats.lastLog);
    // The database file grew by the worker's copies (the store's own autocheckpoint is the backstop, far off).
    expect(statSync(path).size).toBeGreaterThan(fileBefore);
  });

  it('killed: SQLite autocheckpoint is back to its default, writes go on, and no second worker starts', async () => {
    const { store, workers } = await openWatched({ startAfterCommits: 1 });
    await claims(store, 1);
    await vi.waitFor(running(store), { timeout: 20_000 });
    expect(store.checkpointStats().autocheckpointPages).toBe(BACKSTOP_AUTOCHECKPOINT_PAGES);

    await workers[0]!.terminate();
    await vi.waitFor(() => expect(store.checkpointStats().state).toBe('failed'), PATIENTLY);
    expect(store.checkpointStats()).toMatchObject({
      autocheckpointPages: DEFAULT_AUTOCHECKPOINT_PAGES,
      failure: expect.stringMatching(/exited with code 1/),
    });
    const ids = await claims(store, 30);
    expect((await store.get(ids.at(-1)!))?.state).toBe('accepted');
    expect(workers).toHaveLength(1);
  });

  it('one that cannot start, or throws as it starts, changes nothing for the calls', async () => {
    const refused = await openWatched({
      startAfterCommits: 1,
      startWorker: () => {
        throw new Error('no threads left');
      },
    });
    const throwing = await openWatched({
      path: join(dir, 'other.db'),
      startAfterCommits: 1,
      startWorker: () => new Worker('throw new Error("boom at start")', { eval: true }),
    });
    for (const { store } of [refused, throwing]) {
      const [id] = await claims(store, 1);
      await vi.waitFor(() => expect(store.checkpointStats().state).toBe('failed'), PATIENTLY);
      expect(store.checkpointStats().autocheckpointPages).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
      expect((await store.get(id!))?.state).toBe('accepted');
      await claims(store, 3);
    }
    expect(refused.store.checkpointStats().failure).toBe('no threads left');
    expect(throwing.store.checkpointStats().failure).toBe('boom at start');
  });

  it('close() with the worker running: resolves once its thread has ended; a reopen sees every committed write', async () => {
    const { store, workers } = await openWatched({ startAfterCommits: 1 });
    const ids = await claims(store, 10);
    await vi.waitFor(running(store), { timeout: 20_000 });
    const worker = workers[0]!;
    let exitCode: number | undefined;
    worker.once('exit', (code) => {
      exitCode = code;
    });
    // Some still queued when close() is called: they commit first.
    const queued = Array.from({ length: 5 }, () => claimInput());
    const pending = queued.map((input) => store.claim(input));
    await store.close();

    expect(exitCode).toBe(0);
    expect(worker.threadId).toBe(-1);
    expect((await Promise.all(pending)).every((claim) => claim.won)).toBe(true);
    await expect(store.claim(claimInput())).rejects.toThrow(/closed/);
    const reopened = await SqliteStore.open({ path });
    opened.push(reopened);
    for (const id of [...ids, ...queued.map((input) => input.id)]) {
      expect((await reopened.get(id))?.id).toBe(id);
    }
  });

  it('close() before enough commits: the last ones, committed by close(), start no worker', async () => {
    const { store, workers } = await openWatched({ startAfterCommits: 3 });
    await claims(store, 2);
    const pending = [store.claim(claimInput()), store.claim(claimInput())];
    await store.close();
    expect((await Promise.all(pending)).every((claim) => claim.won)).toBe(true);
    expect(workers).toHaveLength(0);
  });

  it('two stores on one file each run their own beside the other; the log is copied back', async () => {
    const [a, b] = [await openWatched({ startAfterCommits: 1 }), await openWatched({ startAfterCommits: 1 })];
    await Promise.all([claims(a.store, 20), claims(b.store, 20)]);
    await vi.waitFor(running(a.store), { timeout: 20_000 });
    await vi.waitFor(running(b.store), { timeout: 20_000 });
    await Promise.all([claims(a.store, 20), claims(b.store, 20)]);
    await vi.waitFor(() => expect(walIndex().backfilled).toBe(walIndex().frames), { timeout: 10_000 });
    for (const { store } of [a, b]) expect(store.checkpointStats().failure).toBeUndefined();
  });

  it('a database in memory gets none', async () => {
    const { store, workers } = await openWatched({ path: ':memory:', startAfterCommits: 1 });
    await claims(store, 5);
    expect(workers).toHaveLength(0);
    expect(store.checkpointStats().state).toBe('off');
  });

  it('never keeps a process alive: one that ends without close() exits while its worker runs', async () => {
    const storeModule = new URL('./sqlite-store.ts', import.meta.url).href;
    const inputModule = new URL('../../../test/support/claim-input.ts', import.meta.url).href;
    const waitModule = new URL('../../../test/support/wait.ts', import.meta.url).href;
    // .mts: the temp dir has no package.json to make a .ts file an ES module.
    const script = join(dir, 'forgets-close.mts');
    writeFileSync(
      script,
      `
      import { SqliteStore } from ${JSON.stringify(storeModule)};
      import { claimInput } from ${JSON.stringify(inputModule)};
      import { waitUntil } from ${JSON.stringify(waitModule)};
      const store = await SqliteStore.open({ path: process.argv[2], checkpoints: { startAfterCommits: 1 } });
      await store.claim(claimInput());
      await waitUntil('the checkpointer running', () => store.checkpointStats().state === 'running');
      process.stdout.write(JSON.stringify(store.checkpointStats()));
      `,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script, path], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
      // A child the worker kept alive is ended here, and the test fails on its exit code.
      timeout: 30_000,
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ state: 'running' });
  });
});
