import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as SshDemo from '../src/demo/ssh-demo.js';
import { startSshd, type TestSshd } from '../src/demo/sshd.js';
import { REPO_ROOT } from './support/node22.js';

// Compiled, as `npx idem demo` runs it: the example server it starts is then plain node, not tsx.
const { runSshDemo } = (await import(join(REPO_ROOT, 'dist/demo/ssh-demo.js'))) as typeof SshDemo;

let sshd: TestSshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(() => sshd?.stop());

describe('idem demo: the SSH action tool scenarios (real sshd)', () => {
  it('every scenario runs the command as often as intended, and says so', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-ssh-demo-'));
    const lines: string[] = [];
    try {
      const reports = await runSshDemo({
        ssh: { ...sshd, dir: join(sshd.dir, 'demo') },
        dataDir,
        out: (line) => lines.push(line),
      });
      expect(reports.map((r) => [r.name.slice(0, 3), r.runs])).toEqual([
        ['S1.', 1],
        ['S2.', 1],
        ['S3.', 1],
      ]);
      expect(
        reports.every((r) => r.ok),
        lines.join('\n'),
      ).toBe(true);
      expect(lines.join('\n')).not.toContain('PRIVATE KEY');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
