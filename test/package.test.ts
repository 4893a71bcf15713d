/**
 * The package as a new user gets it: `npm pack`, installed into a clean project, then the
 * `npx idem gateway -- <command>` form in front of a reference server, driven by the official
 * SDK client over stdio. Also: its published types compile with `skipLibCheck: false`, and a
 * missing native module (scripts disabled at install) is said in one line.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/node22.js';

const run = promisify(execFile);
const EVERYTHING = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const NATIVE = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';

let work: string;
let project: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'idem-package-'));
  project = join(work, 'project');
  mkdirSync(project);
  // dist/ is already compiled by the suite's global setup: pack it as it is.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: REPO_ROOT,
  });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'new-user', version: '1.0.0', type: 'module' }),
  );
  // Scripts off, as with `--ignore-scripts` or pnpm's default: the native module is not built.
  // The dependencies come from npm's cache where `npm ci` of this checkout left them.
  await run(
    'npm',
    ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', join(work, filename)],
    { cwd: project, maxBuffer: 16 * 1024 * 1024 },
  );
}, 600_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('the packed package in a clean project', () => {
  it('ships no source maps pointing at sources it does not ship, and its license', () => {
    const files = readdirSync(join(project, 'node_modules/idem'), { recursive: true }).map(String);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files).toContain('LICENSE');
    // CLI messages name docs by their path in the package (src/support/package-docs.ts).
    expect(files).toContain('docs/security.md');
    expect(files.some((f) => f.startsWith('src'))).toBe(false);
  });

  it('says in one line how to build a native module that is missing', async () => {
    const failed = await run(
      'npx',
      ['--no-install', 'idem', 'gateway', '--', process.execPath, EVERYTHING, 'stdio'],
      {
        cwd: project,
        env: { ...process.env, IDEM_DATA_DIR: join(work, 'data-unbuilt') },
        timeout: 120_000,
        killSignal: 'SIGKILL',
      },
    ).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed).toBeDefined();
    expect(failed?.code).not.toBe(0);
    expect(failed?.stderr).toContain('npm rebuild better-sqlite3');
    expect(failed?.stderr).not.toContain('Could not locate the bindings file');
  }, 150_000);

  it('`npx idem gateway -- <command>` serves a reference server to the SDK client', async () => {
    // The module `npm rebuild better-sqlite3` would compile; this checkout's `npm ci` compiled
    // the same version for the same Node, so it is copied rather than compiled a second time.
    mkdirSync(join(project, 'node_modules/better-sqlite3/build/Release'), { recursive: true });
    copyFileSync(join(REPO_ROOT, NATIVE), join(project, NATIVE));
    const transport = new StdioClientTransport({
      command: 'npx',
      args: ['--no-install', 'idem', 'gateway', '--', process.execPath, EVERYTHING, 'stdio'],
      cwd: project,
      env: { ...(process.env as Record<string, string>), IDEM_DATA_DIR: join(work, 'data') },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'new-user', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain('echo');
      expect(names).toContain('idem_execution_status');
      const echoed = await client.callTool({ name: 'echo', arguments: { message: 'from a clean project' } });
      expect(JSON.stringify(echoed.content)).toContain('from a clean project');
    } finally {
      await client.close();
    }
  }, 150_000);

  it('its types compile with skipLibCheck: false', async () => {
    writeFileSync(
      join(project, 'use.ts'),
      [
        "import { Idem, MemoryStore, OutcomeUnknownError, SqliteStore, PostgresStore } from 'idem';",
        'const idem: Idem = await Idem.open({ store: new MemoryStore() });',
        'export const kinds = [idem, SqliteStore, PostgresStore, OutcomeUnknownError];',
      ].join('\n'),
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          // The user's own Node types, as any Node project has them.
          typeRoots: [join(REPO_ROOT, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['use.ts'],
      }),
    );
    const tsc = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', project], { cwd: project }).then(
      () => ({ code: 0, stdout: '' }),
      (error: { code: number; stdout: string }) => error,
    );
    expect(result.stdout).toBe('');
    expect(result.code).toBe(0);
  }, 300_000);
});
