import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { idemEnvironment } from '../environment.js';
import { resolveDataDir } from '../identity/data-dir.js';

/**
 * The demo's data directory: `--data-dir` or IDEM_DATA_DIR, created (0700) like every command
 * creates it, and kept; else a fresh temporary one, removed when the demo is done — a demo run a
 * day would otherwise fill the temp dir — unless `keep` (`--keep`). `done` says which.
 */
export function demoDataDir(
  named = idemEnvironment().dataDir,
  keep = false,
): { dataDir: string; done(out: (line: string) => void): void } {
  if (named) return { dataDir: resolveDataDir(named), done: () => {} };
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-demo-'));
  return {
    dataDir,
    done(out) {
      if (keep) return out(`kept ${dataDir} (--keep): IDEM_DATA_DIR=${dataDir} idem executions list`);
      rmSync(dataDir, { recursive: true, force: true });
      out(`removed ${dataDir} (--keep keeps it, --data-dir <dir> writes elsewhere)`);
    },
  };
}
