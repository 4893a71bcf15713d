import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Idem } from '../src/library/idem.js';

/**
 * Idem's variables are read at the edges (src/environment.ts) and handed down:
 * the library's `Idem.open` still honours each, as it did when the core read
 * them itself (the journal's signing key was read by journal/signing.ts).
 */
const root = mkdtempSync(join(tmpdir(), 'idem-environment-'));
const VARIABLES = [
  'IDEM_DATA_DIR',
  'IDEM_STORE_URL',
  'IDEM_FINGERPRINT_KEY_FILE',
  'IDEM_JOURNAL_SIGNING_KEY_FILE',
] as const;
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));

afterEach(() => {
  for (const name of VARIABLES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function freshDir(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  return dir;
}

describe('Idem.open and the environment', () => {
  it('IDEM_DATA_DIR: the store and both keys go there when no dataDir is given', async () => {
    const dataDir = join(root, 'from-env');
    process.env.IDEM_DATA_DIR = dataDir;
    delete process.env.IDEM_FINGERPRINT_KEY_FILE;
    delete process.env.IDEM_JOURNAL_SIGNING_KEY_FILE;
    const idem = await Idem.open({ maintenanceIntervalMs: 0 });
    await idem.close();
    expect(existsSync(join(dataDir, 'idem.db'))).toBe(true);
    expect(existsSync(join(dataDir, 'fingerprint.key'))).toBe(true);
    expect(existsSync(join(dataDir, 'journal-signing.key'))).toBe(true);
  });

  it('IDEM_FINGERPRINT_KEY_FILE and IDEM_JOURNAL_SIGNING_KEY_FILE put the keys elsewhere, none in the data directory', async () => {
    const dataDir = freshDir('data');
    const keys = freshDir('keys');
    process.env.IDEM_FINGERPRINT_KEY_FILE = join(keys, 'fp.key');
    process.env.IDEM_JOURNAL_SIGNING_KEY_FILE = join(keys, 'env-signing-key');
    const idem = await Idem.open({ dataDir, maintenanceIntervalMs: 0 });
    await idem.close();
    expect(existsSync(join(keys, 'fp.key'))).toBe(true);
    expect(existsSync(join(keys, 'env-signing-key'))).toBe(true);
    expect(existsSync(join(keys, 'env-signing-key.pub'))).toBe(true);
    expect(existsSync(join(dataDir, 'fingerprint.key'))).toBe(false);
    expect(existsSync(join(dataDir, 'journal-signing.key'))).toBe(false);
  });

  it('IDEM_STORE_URL: with no store named, the library opens PostgreSQL there, as the gateway does', async () => {
    // Nothing listens on port 1: refused at once, which shows which store was opened.
    process.env.IDEM_STORE_URL = 'postgres://idem@127.0.0.1:1/idem';
    const dataDir = freshDir('store-url');
    await expect(Idem.open({ dataDir, maintenanceIntervalMs: 0 })).rejects.toMatchObject({
      name: 'StoreUnavailableError',
      message: expect.stringContaining('ECONNREFUSED'),
    });
    expect(existsSync(join(dataDir, 'idem.db'))).toBe(false);
  });
});
