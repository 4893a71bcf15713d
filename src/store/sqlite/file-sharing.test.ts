import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';
import { SqliteStore } from './sqlite-store.js';

/** Another process with the store file open (and writing nothing), until it is ended. */
async function otherProcessHolding(path: string): Promise<ChildProcess> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const script = `
    const db = new (require(${JSON.stringify(driver)}))(${JSON.stringify(path)});
    db.prepare('SELECT count(*) FROM executions').get();
    process.stdout.write('open\\n');
    process.stdin.on('end', () => db.close()).resume();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  await once(child.stdout as NodeJS.ReadableStream, 'data');
  return child;
}

async function ended(child: ChildProcess): Promise<void> {
  const exit = once(child, 'exit');
  child.stdin?.end();
  await exit;
}

describe('SqliteStore.soleReader: whether another process may read the file (file-sharing.ts)', () => {
  const files = useSqliteFiles();

  it('alone on its file it is; a checkpoint by another connection changes nothing', async () => {
    const store = await files.open();
    expect(store.soleReader()).toBe(true);
    files.raw().pragma('wal_checkpoint(PASSIVE)');
    expect(store.soleReader()).toBe(true);
  });

  it('a second store on the file: neither is, from the moment the second opened', async () => {
    const first = await files.open();
    expect(first.soleReader()).toBe(true);
    const second = await files.open();
    expect(first.soleReader()).toBe(false);
    expect(second.soleReader()).toBe(false);
    await second.close();
    // Sticky: the one that was seen may still be reading.
    expect(first.soleReader()).toBe(false);
  });

  it('a connection that writes: from its first commit', async () => {
    const store = await files.open();
    const other = files.raw();
    other.prepare('SELECT count(*) FROM executions').get();
    expect(store.soleReader()).toBe(true);
    other.exec('BEGIN IMMEDIATE; DELETE FROM executions WHERE 0; COMMIT');
    // A transaction that changed nothing committed nothing.
    expect(store.soleReader()).toBe(true);
    other.exec('CREATE TABLE scratch (x); DROP TABLE scratch');
    expect(store.soleReader()).toBe(false);
  });

  it("an outcome is judged by the latest claim's look (inside its transaction); without one, it looks itself", async () => {
    const store = await files.open();
    await store.claim(claimInput());
    const other = files.raw();
    other.exec('CREATE TABLE scratch (x); DROP TABLE scratch');
    // The claim looked before the other connection committed: its look answers this ask...
    expect(store.soleReader()).toBe(true);
    // ...and the next ask, with no claim since, looks again.
    expect(store.soleReader()).toBe(false);
  });

  it('opened while another process has the file open: not, though that process never wrote', async () => {
    const first = await files.open();
    await first.close();
    const child = await otherProcessHolding(files.path);
    try {
      const store = await files.open();
      expect(store.soleReader()).toBe(false);
    } finally {
      await ended(child);
    }
  });

  it('opened again after every other connection closed: it is (the log went with the last one)', async () => {
    await (await files.open()).close();
    await (await files.open()).close();
    const store = await files.open();
    expect(store.soleReader()).toBe(true);
  });

  it('in memory, always; a connection handed over without open() is taken as shared', async () => {
    const memory = new SqliteStore(new Database(':memory:'));
    expect(memory.soleReader()).toBe(true);
    await memory.close();
    const handed = new SqliteStore(files.raw());
    expect(handed.soleReader()).toBe(false);
    await handed.close();
  });
});
