import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SIGNED_HEAD_FILE } from '../journal/signing.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { Runtime } from './runtime.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-runtime-'));
  dirs.push(dir);
  return dir;
}

describe('Runtime', () => {
  it('opens SQLite in the data directory when no store is named, and on close signs its heads and closes it', async () => {
    const dataDir = freshDir();
    const runtime = await Runtime.open({ dataDir, maintenanceIntervalMs: 0 });
    expect(existsSync(join(dataDir, 'idem.db'))).toBe(true);
    expect(existsSync(join(dataDir, 'fingerprint.key'))).toBe(true);
    await runtime.store.appendEvents(
      [{ kind: 'session_start', actor: 'local:a', requestRef: 's1' }],
      'sessions',
    );
    await runtime.close();
    expect(existsSync(join(dataDir, SIGNED_HEAD_FILE))).toBe(true);
    await expect(runtime.store.list()).rejects.toThrow();
  });

  it('leaves a store it was given to its owner: open, and unsigned', async () => {
    const dataDir = freshDir();
    const store = new MemoryStore();
    const runtime = await Runtime.open({ dataDir, store, maintenanceIntervalMs: 0 });
    expect(runtime.store).toBe(store);
    await runtime.close();
    expect(await store.list()).toEqual([]);
    expect(existsSync(join(dataDir, SIGNED_HEAD_FILE))).toBe(false);
  });

  it('measures the store it opened before any part uses it', async () => {
    const seen: string[] = [];
    const runtime = await Runtime.open({
      dataDir: freshDir(),
      store: { kind: 'memory' },
      maintenanceIntervalMs: 0,
      measure: (store) => {
        seen.push(store.constructor.name);
        return store;
      },
    });
    expect(seen).toEqual(['MemoryStore']);
    expect(runtime.engine.store).toBe(runtime.store);
    await runtime.close();
  });
});
