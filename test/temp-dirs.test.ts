/**
 * Issue 46.9: the suite leaves nothing in the system's temp dir. A few test files that make
 * temporary directories — the in-process HTTP gateway's (test/support/http-gateway.ts), the
 * credentials', the library's, the journal verifier's — run in a vitest of their own whose temp
 * dir (TMPDIR) is a fresh one; when they are done it holds no `idem-` directory.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/node22.js';

const FILES = [
  'src/credentials/credentials.test.ts',
  'src/library/idem.test.ts',
  'src/journal/verify.test.ts',
  'test/gateway/debug-traffic.test.ts',
];

describe('temporary directories', () => {
  it('a few test files that make them leave none behind', { timeout: 300_000 }, async () => {
    const temp = mkdtempSync(join(tmpdir(), 'idem-tempcount-'));
    try {
      const vitest = join(REPO_ROOT, 'node_modules/vitest/vitest.mjs');
      // One worker, its own TMPDIR; the global setup (dist/, fixtures) is incremental: done already.
      await promisify(execFile)(process.execPath, [vitest, 'run', '--maxWorkers=1', ...FILES], {
        cwd: REPO_ROOT,
        env: { ...process.env, TMPDIR: temp },
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(readdirSync(temp).filter((name) => name.startsWith('idem-'))).toEqual([]);
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  });
});
