import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PATIENTLY } from '../../../test/support/wait.js';
import { GroupCommit, type GroupCommitOptions } from './group-commit.js';

/**
 * Group commit against a real SQLite connection, with the one thing a test cannot do for
 * real — the disk's answer to an fsync — handed to the test: each sync of the log waits until
 * the test settles it, so what a caller hears before and after the disk answers is visible.
 */
describe('GroupCommit: who waits for the disk', () => {
  let db: Database.Database;
  let syncs: { resolve: () => void; reject: (error: Error) => void }[];
  let insert: Database.Transaction<(id: string) => string>;

  function groupCommit(options: Partial<GroupCommitOptions> = {}): GroupCommit {
    return new GroupCommit(db, {
      check: () => {},
      mapError: (error) => error,
      syncLog: () =>
        new Promise<void>((resolve, reject) => {
          syncs.push({ resolve, reject });
        }),
      syncFailed: (error) => new Error(`not on disk: ${(error as Error).message}`),
      syncWithinMs: 200,
      ...options,
    });
  }

  const settled = async (promise: Promise<unknown>) => {
    let done = false;
    promise.then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    // Every turn the batch and its settlement could take: an immediate, then promise jobs.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY)');
    const statement = db.prepare('INSERT INTO t (id) VALUES (?)');
    insert = db.transaction((id: string) => {
      statement.run(id);
      return id;
    });
    syncs = [];
  });
  afterEach(() => {
    vi.useRealTimers();
    db.close();
  });

  it('holds a deferred write for the next write to join, or for deferWithinMs, or until a read asks', async () => {
    const writes = groupCommit({ deferWithinMs: 60_000 });
    const rows = () => db.prepare('SELECT id FROM t ORDER BY id').pluck().all();
    const held = writes.run(insert, 'deferred', 'a');
    expect(await settled(held)).toBe(false);
    expect(rows()).toEqual([]);
    // The next write takes it into its batch: one commit for both, the held one first.
    const claim = writes.run(insert, 'sync', 'b');
    await vi.waitFor(() => expect(syncs).toHaveLength(1), PATIENTLY);
    expect(rows()).toEqual(['a', 'b']);
    expect(writes.stats.commits).toBe(1);
    syncs[0]?.resolve();
    await expect(Promise.all([held, claim])).resolves.toEqual(['a', 'b']);

    // A read commits what is held before it reads.
    const another = writes.run(insert, 'deferred', 'c');
    writes.commitHeld();
    expect(rows()).toEqual(['a', 'b', 'c']);
    await expect(another).resolves.toBe('c');

    // Nothing else comes: committed once deferWithinMs has passed.
    vi.useFakeTimers();
    const other = groupCommit({ deferWithinMs: 5 });
    const alone = other.run(insert, 'deferred', 'd');
    vi.advanceTimersByTime(5);
    vi.useRealTimers();
    await expect(alone).resolves.toBe('d');
    expect(rows()).toEqual(['a', 'b', 'c', 'd']);
    // Closed here, so that no lazy sync of theirs lands in another test's list.
    await closeAll(writes);
    await closeAll(other);
  });

  it('a batch holding a write that must sync settles only once the sync has; a lazy batch does not wait for one', async () => {
    const writes = groupCommit();
    const claim = writes.run(insert, 'sync', 'a');
    const alongside = writes.run(insert, 'lazy', 'b');
    expect(await settled(claim)).toBe(false);
    expect(syncs).toHaveLength(1);
    // Committed (visible) but not answered: the answer waits for the disk.
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(2);
    expect(await settled(alongside)).toBe(false);
    syncs[0]?.resolve();
    await expect(claim).resolves.toBe('a');
    await expect(alongside).resolves.toBe('b');

    const outcome = writes.run(insert, 'lazy', 'c');
    await expect(outcome).resolves.toBe('c');
    expect(syncs).toHaveLength(1);
    expect(writes.stats).toMatchObject({ commits: 2, writes: 3, synced: 1 });
    await closeAll(writes);
  });

  it('a failed sync rejects every write that waited for it, with syncFailed; a write that failed alone keeps its own error', async () => {
    const writes = groupCommit();
    await writes.run(insert, 'lazy', 'taken');
    const results = Promise.allSettled([
      writes.run(insert, 'sync', 'x'),
      writes.run(insert, 'sync', 'taken'),
    ]);
    await vi.waitFor(() => expect(syncs).toHaveLength(1), { timeout: PATIENTLY.timeout });
    syncs[0]?.reject(new Error('EIO'));
    const [x, taken] = await results;
    expect(x).toMatchObject({ status: 'rejected', reason: { message: 'not on disk: EIO' } });
    expect(taken).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' } });
    await closeAll(writes);
  });

  it('a lazy commit nothing else syncs is synced within syncWithinMs; one a later sync covered is not synced again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const writes = groupCommit();
    await writes.run(insert, 'lazy', 'outcome-1');
    await vi.advanceTimersByTimeAsync(199);
    expect(syncs).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(syncs).toHaveLength(1);
    expect(writes.stats.timerSyncs).toBe(1);
    syncs[0]?.resolve();

    await writes.run(insert, 'lazy', 'outcome-2');
    const claim = writes.run(insert, 'sync', 'claim');
    await vi.waitFor(() => expect(syncs).toHaveLength(2), { timeout: PATIENTLY.timeout });
    syncs[1]?.resolve();
    await claim;
    await vi.advanceTimersByTimeAsync(1_000);
    // The claim's sync carried outcome-2 to the disk: the timer found nothing left to do.
    expect(syncs).toHaveLength(2);
    expect(writes.stats.timerSyncs).toBe(1);
    await closeAll(writes);
  });

  it('a sync the timer made that fails is tried again, never given up silently', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const writes = groupCommit();
    await writes.run(insert, 'lazy', 'outcome');
    await vi.advanceTimersByTimeAsync(200);
    syncs[0]?.reject(new Error('EIO'));
    await vi.advanceTimersByTimeAsync(200);
    expect(syncs).toHaveLength(2);
    syncs[1]?.resolve();
    await closeAll(writes);
  });

  it('close() commits what is queued, waits for the syncs in flight and syncs what none covered', async () => {
    const writes = groupCommit();
    await writes.run(insert, 'lazy', 'outcome');
    const claim = writes.run(insert, 'sync', 'queued');
    const closed = writes.close();
    let closedYet = false;
    void closed.then(() => {
      closedYet = true;
    });
    await vi.waitFor(() => expect(syncs).toHaveLength(1), { timeout: PATIENTLY.timeout });
    expect(closedYet).toBe(false);
    syncs[0]?.resolve();
    await expect(claim).resolves.toBe('queued');
    await closed;
    expect(syncs).toHaveLength(1);
  });

  it('a last sync at close() that fails is not retried on the closed store', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const writes = groupCommit();
    await writes.run(insert, 'lazy', 'outcome');
    const closed = writes.close();
    await vi.waitFor(() => expect(syncs).toHaveLength(1), { timeout: PATIENTLY.timeout });
    syncs[0]?.reject(new Error('EIO'));
    await closed;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(syncs).toHaveLength(1);
  });

  it('without a way to sync (synchronous "normal", or :memory:), every batch settles at its commit', async () => {
    const { syncLog: _none, ...rest } = {
      check: () => {},
      mapError: (error: unknown) => error,
      syncLog: undefined,
      syncFailed: (error: unknown) => error,
      syncWithinMs: 200,
    };
    const writes = new GroupCommit(db, rest);
    await expect(writes.run(insert, 'sync', 'a')).resolves.toBe('a');
    expect(writes.stats).toMatchObject({ synced: 0, timerSyncs: 0 });
    await writes.close();
  });

  /** Settles every sync close() waits for or asks for, until it has closed. */
  async function closeAll(writes: GroupCommit): Promise<void> {
    let closed = false;
    const closing = writes.close().then(() => {
      closed = true;
    });
    while (!closed) {
      for (const sync of syncs) sync.resolve();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await closing;
  }
});
