/**
 * Random damage to a real SQLite store, at full count:
 *   npx tsx scripts/sqlite-damage.ts [trials=500] [executions=2000]
 * Builds one store, then for each trial copies it, overwrites 1–16 random
 * bytes at a random offset, and records what happens: refused at open
 * (SqliteStore.open runs integrity_check), and of those how many the cheaper
 * quick_check would have let through; opened and then refused by a read
 * (damage the check missed that a read found); or opened with every
 * execution readable — and then whether what it reads equals what was
 * written (a silent change: SQLite keeps no checksums, so a flipped byte
 * inside a value is invisible to any check), and whether every execution is
 * still found by its fingerprint (what stops a repeat dispatching again).
 */
import { closeSync, copyFileSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { StoreRefusedError } from '../src/errors.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import type { ExecutionRecord } from '../src/store/types.js';
import { fillWithCompleted } from '../test/support/claim-input.js';

const trials = Number(process.argv[2] ?? 500);
const count = Number(process.argv[3] ?? 2000);
const dir = mkdtempSync(join(tmpdir(), 'idem-damage-'));
const base = join(dir, 'base.db');

function quickCheckOf(path: string): string {
  const raw = new Database(path, { readonly: true });
  try {
    return (raw.pragma('quick_check') as { quick_check: string }[])[0]!.quick_check;
  } catch {
    return 'error';
  } finally {
    raw.close();
  }
}

/** A stable view of a record: what a later call would be answered from. */
const view = ({ readAt: _r, ...rest }: ExecutionRecord) => JSON.stringify(rest);

try {
  const store = await SqliteStore.open({ path: base });
  await fillWithCompleted(store, count, (i) => `charged order ${i}`);
  const original = new Map((await store.list({ limit: count })).map((r) => [r.id, view(r)]));
  await store.close();
  const size = statSync(base).size;

  const tally = {
    refusedAtOpen: 0,
    refusedAtOpenThatQuickCheckPasses: 0,
    openedThenRefusedByARead: 0,
    openedAllReadable: 0,
    silentChange: 0,
    lostFromActiveIndex: 0,
  };
  const trial = join(dir, 'trial.db');
  for (let t = 0; t < trials; t++) {
    rmSync(trial, { force: true });
    copyFileSync(base, trial);
    const length = 1 + Math.floor(Math.random() * 16);
    const offset = Math.floor(Math.random() * (size - length));
    const fd = openSync(trial, 'r+');
    writeSync(
      fd,
      Buffer.from(Array.from({ length }, () => Math.floor(Math.random() * 256))),
      0,
      length,
      offset,
    );
    closeSync(fd);

    const quickCheck = quickCheckOf(trial);
    let opened: SqliteStore;
    try {
      opened = await SqliteStore.open({ path: trial });
    } catch (error) {
      if (!(error instanceof StoreRefusedError)) throw error;
      tally.refusedAtOpen++;
      if (quickCheck === 'ok') tally.refusedAtOpenThatQuickCheckPasses++;
      continue;
    }
    try {
      const records = await opened.list({ limit: count + 10 });
      for (const id of original.keys()) await opened.get(id);
      for (const record of records) await opened.findActive(record.fingerprint);
      await opened.readJournal(0, count * 2);
      tally.openedAllReadable++;
      const changed = records.length !== original.size || records.some((r) => original.get(r.id) !== view(r));
      if (changed) tally.silentChange++;
      // The index a repeat is matched by: does each execution's fingerprint still find it?
      const lost = await Promise.all(
        records.map(async (r) => (await opened.findActive(r.fingerprint))?.id !== r.id),
      );
      if (lost.some(Boolean)) tally.lostFromActiveIndex++;
    } catch (error) {
      if (!(error instanceof StoreRefusedError)) throw error;
      tally.openedThenRefusedByARead++;
    } finally {
      await opened.close();
    }
  }
  console.log(`${trials} trials on a store of ${count} executions (${(size / 1024).toFixed(0)} KiB):`);
  console.log(JSON.stringify(tally, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
