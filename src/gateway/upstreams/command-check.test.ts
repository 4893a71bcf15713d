import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unstartableReason } from './command-check.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-command-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(process.platform === 'win32')('whether a stdio upstream can be spawned', () => {
  it('finds a command on the PATH it is given, or by its path; says why not otherwise', () => {
    const script = join(dir, 'server.sh');
    writeFileSync(script, '#!/bin/sh\n');
    chmodSync(script, 0o755);
    const plain = join(dir, 'plain.txt');
    writeFileSync(plain, '');
    expect(unstartableReason({ name: 'a', command: 'node' })).toBeUndefined();
    expect(unstartableReason({ name: 'a', command: 'server.sh', env: { PATH: dir } })).toBeUndefined();
    expect(unstartableReason({ name: 'a', command: './server.sh', cwd: dir })).toBeUndefined();
    expect(unstartableReason({ name: 'a', command: 'server.sh', env: { PATH: '/nowhere' } })).toMatch(
      /not on its PATH \(spawn server\.sh ENOENT\)/,
    );
    expect(unstartableReason({ name: 'a', command: plain })).toMatch(/is not executable/);
    expect(unstartableReason({ name: 'a', command: './missing.sh', cwd: dir })).toMatch(/does not exist/);
    expect(unstartableReason({ name: 'a', command: 'node', cwd: join(dir, 'gone') })).toMatch(
      /working directory .* does not exist/,
    );
    expect(unstartableReason({ name: 'a', url: 'https://h.example/mcp' })).toBeUndefined();
  });
});
