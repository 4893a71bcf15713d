import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type * as Demo from '../src/demo/demo.js';
import { REPO_ROOT } from './support/node22.js';
import { runIdem } from './support/run-cli.js';

// The demo as `npx idem demo` runs it, compiled (dist/, built by the suite's setup): its example
// server then starts as plain node for each agent session, not under tsx (~1 s of CPU a start).
const { runDemo } = (await import(join(REPO_ROOT, 'dist/demo/demo.js'))) as typeof Demo;

describe.each(['gateway', 'library'] as const)('idem demo (via %s)', (via) => {
  it('every scenario has the right counts on the embedded SQLite store', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'idem-demo-test-'));
    // A data directory that does not exist yet is created, as every command creates it.
    const dataDir = join(parent, 'not', 'yet');
    const lines: string[] = [];
    try {
      // The SSH scenarios run once (via the gateway); the library run shows the line said without an sshd.
      const sshdBinary = via === 'library' ? join(dataDir, 'no-such-sshd') : undefined;
      const reports = await runDemo({
        dataDir,
        via,
        out: (line) => lines.push(line),
        ...(sshdBinary ? { sshdBinary } : {}),
      });
      expect(reports.charges.map((r) => [r.name.slice(0, 3), r.charges])).toEqual([
        ['1. ', 1],
        ['1b.', 1],
        ['2. ', 1],
        ['3. ', 1],
        ['4. ', 1],
        ['5. ', 1],
      ]);
      if (sshdBinary) {
        expect(reports.ssh).toEqual([]);
        expect(lines).toContain(`SSH scenarios skipped: no sshd at ${sshdBinary} (install openssh-server)\n`);
      } else {
        expect(reports.ssh.map((r) => [r.name.slice(0, 3), r.runs])).toEqual([
          ['S1.', 1],
          ['S2.', 1],
          ['S3.', 1],
        ]);
      }
      expect([...reports.charges, ...reports.ssh].every((r) => r.ok)).toBe(true);
      expect(lines.join('\n')).not.toContain('PRIVATE KEY');
      expect(lines.join('\n')).not.toContain('4242424242424242');
      // The processor's key (the HTTP action tool's credential) is never printed.
      expect(lines.join('\n')).not.toMatch(/sk_demo_/);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
    // Six charge scenarios and, via the gateway, three at a real sshd: over a minute on a loaded machine.
  }, 180_000);
});

describe('idem demo without a data directory', () => {
  it('removes the temporary directory it made, and says so; --keep keeps it', {
    timeout: 300_000,
  }, async () => {
    // The system temp dir as the demo sees it (os.tmpdir reads TMPDIR): one of its own, to count in.
    const parent = mkdtempSync(join(tmpdir(), 'idem-demo-tmp-'));
    const saved = { TMPDIR: process.env.TMPDIR, IDEM_DATA_DIR: process.env.IDEM_DATA_DIR };
    process.env.TMPDIR = parent;
    delete process.env.IDEM_DATA_DIR;
    try {
      const lines: string[] = [];
      const run = (keep: boolean) =>
        runDemo({
          via: 'library',
          keep,
          out: (line) => lines.push(line),
          sshdBinary: join(parent, 'no-sshd'),
        });
      const reports = await run(false);
      expect(reports.charges.every((r) => r.ok)).toBe(true);
      expect(readdirSync(parent)).toEqual([]);
      expect(lines.at(-1)).toMatch(
        /^removed .*idem-demo-\w+ \(--keep keeps it, --data-dir <dir> writes elsewhere\)$/,
      );
      await run(true);
      const kept = readdirSync(parent);
      expect(kept).toHaveLength(1);
      expect(lines.at(-1)).toBe(
        `kept ${join(parent, kept[0] as string)} (--keep): IDEM_DATA_DIR=${join(parent, kept[0] as string)} idem executions list`,
      );
    } finally {
      for (const [name, value] of Object.entries(saved))
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('idem demo that fails', () => {
  it('exits with its code after the processor it started, instead of hanging on its server', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-demo-fail-'));
    try {
      // The processor is listening by the time the demo writes its key, which cannot be written here.
      mkdirSync(join(dataDir, 'processor.key'));
      // Waits for the process to exit; the kill only bounds a hang, which is the failure under test.
      const result = await runIdem(['demo', '--data-dir', dataDir], { dataDir, timeoutMs: 50_000 });
      expect(result.stderr).toMatch(/^idem: EISDIR.*processor\.key/m);
      expect(result.code).toBe(1);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    // Via the gateway it also starts an upstream process and an sshd: at load 17 on 2 cores, 40-60 s.
  }, 300_000);
});

/**
 * The counts come from conditions, not from how fast the machine is: with the
 * process's event loop stalled again and again (what a machine at load 10+
 * does to it), every scenario still has its count. Before, fixed processor
 * delays raced 300/600 ms tool timeouts and a stalled loop flipped them.
 */
describe('idem demo on a machine slower than its timeouts (via library)', () => {
  it('every count is right with the event loop stalled 250 ms at a time', { timeout: 300_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-demo-slow-'));
    // Load, not a condition: each tick of it blocks the thread the demo's target and processor run on.
    const stall = setInterval(() => {
      const until = performance.now() + 250;
      while (performance.now() < until);
    }, 100);
    try {
      const reports = await runDemo({
        dataDir,
        via: 'library',
        out: () => {},
        sshdBinary: join(dataDir, 'no-such-sshd'),
      });
      expect(reports.charges.map((r) => [r.name.slice(0, 3), r.charges, r.ok])).toEqual([
        ['1. ', 1, true],
        ['1b.', 1, true],
        ['2. ', 1, true],
        ['3. ', 1, true],
        ['4. ', 1, true],
        ['5. ', 1, true],
      ]);
    } finally {
      clearInterval(stall);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
