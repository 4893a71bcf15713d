import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOrCreateSecret } from './secret-key.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = resolve(here, '../..');

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-key-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('loadOrCreateSecret', () => {
  it('creates a private key of the requested size', () => {
    const dir = tempDir();
    const key = loadOrCreateSecret(dir, 'test.key');
    expect(key).toHaveLength(32);
    expect(statSync(join(dir, 'test.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'test.key')).equals(key)).toBe(true);
    // The temporary file it was written through is gone.
    expect(readdirSync(dir)).toEqual(['test.key']);
    expect(loadOrCreateSecret(dir, 'long.key', 64)).toHaveLength(64);
  });

  it('returns the same key when reopened', () => {
    const dir = tempDir();
    const first = loadOrCreateSecret(dir, 'test.key');
    const again = loadOrCreateSecret(dir, 'test.key');
    expect(again.equals(first)).toBe(true);
    expect(loadOrCreateSecret(tempDir(), 'test.key').equals(first)).toBe(false);
    expect(loadOrCreateSecret(dir, 'other.key').equals(first)).toBe(false);
  });

  it('refuses a damaged key instead of replacing it', () => {
    const dir = tempDir();
    const path = join(dir, 'test.key');
    for (const damaged of [Buffer.alloc(0), Buffer.alloc(5, 1), Buffer.alloc(33, 1)]) {
      writeFileSync(path, damaged);
      expect(() => loadOrCreateSecret(dir, 'test.key')).toThrow(
        new RegExp(`holds ${damaged.length} bytes, expected 32: refusing to use a damaged key`),
      );
      // Still the damaged file: an operator decides, not us.
      expect(readFileSync(path).equals(damaged)).toBe(true);
    }
  });

  it('does not invent a directory that is not there', () => {
    const missing = join(tempDir(), 'absent');
    expect(() => loadOrCreateSecret(missing, 'test.key')).toThrow(/ENOENT/);
  });

  it('reports other read errors instead of overwriting', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'test.key'));
    expect(() => loadOrCreateSecret(dir, 'test.key')).toThrow(/EISDIR/);
  });

  it('gives 8 processes racing on one empty directory one key', async () => {
    const children = 8;
    const rounds = 12;
    const root = tempDir();
    const raceDirs = Array.from({ length: rounds }, (_, r) => join(root, `round-${r}`));
    for (const dir of raceDirs) mkdirSync(dir);
    const script = join(tempDir(), 'child.mts');
    writeFileSync(
      script,
      [
        `import { loadOrCreateSecret } from ${JSON.stringify(join(here, 'secret-key.ts'))};`,
        `const dirs = ${JSON.stringify(raceDirs)};`,
        // Everyone is loaded and waiting before anyone tries: a real race, not a queue.
        `process.stdout.write('ready\\n');`,
        `process.stdin.once('data', (chunk) => {`,
        `  const start = Number(String(chunk).trim());`,
        `  const out = [];`,
        `  for (const [r, dir] of dirs.entries()) {`,
        // All processes spin to the same instant, then create the key in an empty directory.
        `    while (Date.now() < start + r * 25) {}`,
        `    out.push(r + ':' + loadOrCreateSecret(dir, 'race.key').toString('hex'));`,
        `  }`,
        `  process.stdout.write('keys ' + out.join(' ') + '\\n', () => process.exit(0));`,
        `});`,
      ].join('\n'),
    );

    const spawned: ChildProcess[] = [];
    const outputs: Promise<string>[] = [];
    const readies: Promise<void>[] = [];
    for (let i = 0; i < children; i++) {
      const child = spawn(process.execPath, ['--import', 'tsx', script], {
        cwd: repoRoot,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      spawned.push(child);
      let out = '';
      let err = '';
      let signalReady: () => void = () => {};
      readies.push(new Promise<void>((ok) => (signalReady = ok)));
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('ready\n')) signalReady();
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      outputs.push(
        new Promise<string>((ok, fail) => {
          child.on('error', fail);
          child.on('exit', (code) => {
            signalReady();
            if (code === 0) ok(out);
            else fail(new Error(`child ${i} exited ${code}: ${err}`));
          });
        }),
      );
    }
    try {
      await Promise.all(readies);
      const start = Date.now() + 300;
      for (const child of spawned) child.stdin?.write(`${start}\n`);
      const results = await Promise.all(outputs);
      const perChild = results.map((out) => {
        const line = /keys (.*)/.exec(out)?.[1] ?? '';
        return new Map(line.split(' ').map((entry) => entry.split(':') as [string, string]));
      });
      for (const [r, dir] of raceDirs.entries()) {
        const keys = perChild.map((keysOf) => keysOf.get(String(r)));
        expect(keys.every((key) => key?.length === 64)).toBe(true);
        expect(new Set(keys).size).toBe(1);
        expect(readFileSync(join(dir, 'race.key')).toString('hex')).toBe(keys[0]);
        expect(statSync(join(dir, 'race.key')).mode & 0o777).toBe(0o600);
        // No temporary files are left behind by the losers.
        expect(readdirSync(dir)).toEqual(['race.key']);
      }
    } finally {
      for (const child of spawned) if (child.exitCode === null) child.kill();
    }
  });
});
