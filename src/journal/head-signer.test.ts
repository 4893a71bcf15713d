import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { JOURNAL_SIGNING_KEY_FILE } from '../defaults.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { signJournalHeads } from './head-signer.js';
import { PUBLIC_KEY_FILE, verifySignedHead } from './signing.js';

const root = mkdtempSync(join(tmpdir(), 'idem-head-signer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

/** A data directory with a store of `events` activity rows, signed once. */
async function signedStore(events = 20, sign = true) {
  const dataDir = join(root, `d${++dirs}`);
  mkdirSync(dataDir);
  const path = join(dataDir, 'idem.db');
  const store = await SqliteStore.open({ path });
  // One write per event, so one row per seq: a tamper below cuts between rows.
  for (let i = 0; i < events; i++) await store.appendEvents([{ kind: 'receipt_hit', requestRef: `r${i}` }]);
  if (sign) await signJournalHeads(store, dataDir);
  return { dataDir, path, store };
}

/** Changes the store file behind the store's back, as an attacker with the file would. */
function tamper(path: string, sql: string): void {
  const db = new Database(path);
  db.exec('DROP TRIGGER activity_journal_no_update; DROP TRIGGER activity_journal_no_delete;');
  db.exec(sql);
  db.close();
}

describe('signJournalHeads: heads only move forward', () => {
  it('signs a journal that grew', async () => {
    const { dataDir, store } = await signedStore();
    await store.appendEvents([{ kind: 'receipt_hit', requestRef: 'more' }]);
    const heads = await signJournalHeads(store, dataDir);
    expect(heads.find((h) => h.stream === 'activity')?.seq).toBe(21);
    await store.close();
  });

  it('refuses to sign a journal cut below its last signed head (that would launder the truncation)', async () => {
    const { dataDir, path, store } = await signedStore();
    tamper(path, 'DELETE FROM activity_journal WHERE seq > 15');
    await expect(signJournalHeads(store, dataDir)).rejects.toThrow(
      /ends at seq 15, before its last signed head \(seq 20\)/,
    );
    await store.close();
  });

  it('refuses to sign a journal whose signed row was rewritten, even if it grew since', async () => {
    const { dataDir, path, store } = await signedStore();
    tamper(path, "UPDATE activity_journal SET hash = 'x' || substr(hash, 2) WHERE seq = 20");
    await store.appendEvents([{ kind: 'receipt_hit', requestRef: 'more' }]);
    await expect(signJournalHeads(store, dataDir)).rejects.toThrow(/seq 20 no longer has the signed hash/);
    await store.close();
  });
});

describe('the signing key outside the data directory', () => {
  it('keyFile: the key pair is created there, none in the data directory, and the heads verify with it', async () => {
    const { dataDir, store } = await signedStore(0, false);
    const keyDir = join(root, 'keys');
    mkdirSync(keyDir);
    await store.appendEvents([{ kind: 'receipt_hit', requestRef: 'r' }]);
    const heads = await signJournalHeads(store, dataDir, { keyFile: join(keyDir, 'journal-signing.key') });
    await store.close();
    expect(existsSync(join(dataDir, JOURNAL_SIGNING_KEY_FILE))).toBe(false);
    expect(existsSync(join(dataDir, PUBLIC_KEY_FILE))).toBe(false);
    const publicKeyPem = readFileSync(join(keyDir, 'journal-signing.pub'), 'utf8');
    expect(heads.length).toBeGreaterThan(0);
    for (const head of heads) expect(verifySignedHead(head, publicKeyPem)).toBe(true);
  });
});
