import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Idem } from '../../src/library/idem.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';

/**
 * An Idem as a library server opens it, for a test: a memory store, a data directory of its own
 * (named from `prefix`), maintenance off. `cleanups` closes it and removes the directory.
 */
export async function openTestIdem(
  cleanups: (() => Promise<void> | void)[],
  prefix: string,
): Promise<{ idem: Idem; store: MemoryStore; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const store = new MemoryStore();
  const idem = await Idem.open({ dataDir, store, maintenanceIntervalMs: 0 });
  cleanups.push(async () => {
    await idem.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { idem, store, dataDir };
}
