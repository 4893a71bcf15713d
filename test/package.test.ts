/**
 * The package as a new user gets it: `npm pack`, installed into a clean project, then the
 * `npx idem gateway -- <command>` form in front of a reference server, driven by the official
 * SDK client over stdio. Also: its published types compile with `skipLibCheck: false`, and a
 * missing native module (scripts disabled at install) is said in one line. The optional peers
 * (pg, ssh2, prom-client, @opentelemetry/api) are not installed: the library and a SQLite
 * gateway work without them, and a feature that needs one names it in one line.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
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
/** Loaded only by the feature that needs each (docs/adr/0038-optional-peer-packages.md); @types/pg with pg. */
const OPTIONAL = ['pg', 'ssh2', 'prom-client', '@opentelemetry/api', '@types/pg'];

let work: string;
let project: string;
/** Of OPTIONAL, what the plain install put into the project (then removed, so that what follows holds on any install). */
let installedOptional: string[];

/**
 * The module `npm rebuild better-sqlite3` would compile; this checkout's `npm ci` compiled
 * the same version for the same Node, so it is copied rather than compiled a second time.
 */
function buildNativeModule(): void {
  mkdirSync(join(project, 'node_modules/better-sqlite3/build/Release'), { recursive: true });
  copyFileSync(join(REPO_ROOT, NATIVE), join(project, NATIVE));
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** A command in the project, its exit code and output (a failure is a result, not a throw). */
function runInProject(command: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return run(command, args, {
    cwd: project,
    env: { ...process.env, ...env },
    timeout: 120_000,
    killSignal: 'SIGKILL',
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

/** The lines of stderr that are the CLI's own (idem: …), as a user reads them. */
function idemLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('idem'));
}

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
  installedOptional = OPTIONAL.filter((name) => existsSync(join(project, 'node_modules', name)));
  for (const name of installedOptional) rmSync(join(project, 'node_modules', name), { recursive: true });
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
    buildNativeModule();
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

  it('installs none of pg, ssh2, prom-client, @opentelemetry/api (optional peers)', () => {
    expect(installedOptional).toEqual([]);
  });

  it('without them, `import "idem"` works and an Idem tool on the SQLite store runs a call once', async () => {
    buildNativeModule();
    // The SDK and zod are idem's own dependencies: installed beside it, as a server author has them.
    writeFileSync(
      join(project, 'library.mjs'),
      `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { Idem } from 'idem';
const [dataDir, path] = process.argv.slice(2);
const idem = await Idem.open({ dataDir, store: { kind: 'sqlite', path }, maintenanceIntervalMs: 0 });
const server = new McpServer({ name: 'payments', version: '1.0.0' });
let runs = 0;
idem.tool(server, 'charge_card', { inputSchema: { amount: z.number() }, contract: { replay: 'keyed' } }, async () => {
  runs += 1;
  return { content: [{ type: 'text', text: 'charged' }] };
});
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await idem.connect(server, serverSide);
const client = new Client({ name: 'new-user', version: '1.0.0' });
await client.connect(clientSide);
const call = () => client.callTool({ name: 'charge_card', arguments: { amount: 5 } });
const answers = [await call(), await call()];
await client.close();
await idem.close();
console.log(JSON.stringify({ runs, texts: answers.map((a) => a.content.at(-1).text), replayed: answers.map((a) => a._meta?.['io.idem/replayed'] === true) }));
`,
    );
    const ran = await runInProject(process.execPath, [
      'library.mjs',
      join(work, 'library-data'),
      join(work, 'library.db'),
    ]);
    expect(ran.stderr).toBe('');
    expect(JSON.parse(ran.stdout)).toEqual({
      runs: 1,
      texts: ['charged', 'charged'],
      replayed: [false, true],
    });
  });

  it('without pg, a PostgreSQL store is refused in one line naming it, by the library and the CLI', async () => {
    const url = 'postgres://idem@127.0.0.1:1/idem';
    writeFileSync(
      join(project, 'postgres.mjs'),
      `import { MissingPackageError, openStore } from 'idem';
await openStore({ kind: 'postgres', url: ${JSON.stringify(url)}, pool: { connectionTimeoutMs: 2000 } }).then(
  () => console.log('opened'),
  (error) => console.log(JSON.stringify({
    name: error.name, missing: error instanceof MissingPackageError, packageName: error.packageName, message: error.message,
  })),
);
`,
    );
    const refused = JSON.parse((await runInProject(process.execPath, ['postgres.mjs'])).stdout);
    expect(refused).toMatchObject({ name: 'MissingPackageError', missing: true, packageName: 'pg' });
    expect(refused.message).toContain('`npm install pg`');
    const cli = await runInProject(
      'npx',
      ['--no-install', 'idem', 'gateway', '--', process.execPath, EVERYTHING, 'stdio'],
      { IDEM_STORE_URL: url, IDEM_DATA_DIR: join(work, 'data-postgres') },
    );
    expect(cli.code).toBe(1);
    expect(idemLines(cli.stderr)).toEqual([
      'idem: The PostgreSQL store needs the package pg, which is not installed: run `npm install pg` where idem ' +
        'is installed (with npx: `npx -y -p idem -p pg idem …`)',
    ]);
  });

  it('without ssh2, an SSH tool is refused (the call: nothing sent; the gateway: at start), naming it', async () => {
    const host = {
      name: 'web',
      host: '127.0.0.1',
      port: 1,
      user: 'deploy',
      credential: 'deploy-key',
      hostKey: `SHA256:${'A'.repeat(43)}`,
    };
    writeFileSync(
      join(project, 'ssh.mjs'),
      `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Idem } from 'idem';
const idem = await Idem.open({ dataDir: process.argv[2], store: { kind: 'memory' }, maintenanceIntervalMs: 0 });
const server = new McpServer({ name: 'deploys', version: '1.0.0' });
idem.sshTool(server, 'deploy', {
  description: 'Deploy (once).',
  inputSchema: {},
  ssh: { host: ${JSON.stringify(host)}, command: 'true' },
  resolveCredential: async () => 'key',
});
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await idem.connect(server, serverSide);
const client = new Client({ name: 'new-user', version: '1.0.0' });
await client.connect(clientSide);
const answer = await client.callTool({ name: 'deploy', arguments: {} });
await client.close();
await idem.close();
console.log(JSON.stringify({ code: answer.structuredContent?.idem?.code, text: answer.content.map((c) => c.text).join('\\n') }));
`,
    );
    const refused = JSON.parse(
      (await runInProject(process.execPath, ['ssh.mjs', join(work, 'ssh-data')])).stdout,
    );
    expect(refused.code).toBe('IDEM_DENIED');
    expect(refused.text).toContain('`npm install ssh2`');

    const keyFile = join(work, 'deploy.key');
    writeFileSync(keyFile, 'not read: the start stops before\n');
    chmodSync(keyFile, 0o600);
    const cli = await gatewayWithConfig('ssh', {
      credentials: { 'deploy-key': { file: keyFile } },
      ssh_hosts: {
        web: { host: '127.0.0.1', user: 'deploy', credential: 'deploy-key', host_key: host.hostKey },
      },
      ssh_tools: {
        deploy: {
          description: 'Deploy (once).',
          host: 'web',
          command: 'true',
          contract: { replay: 'keyed' },
        },
      },
    });
    expect(cli.code).toBe(1);
    expect(idemLines(cli.stderr)).toEqual([
      expect.stringContaining('needs the package ssh2, which is not installed'),
    ]);
  });

  it('without prom-client, `metrics:` stops the start naming it', async () => {
    const cli = await gatewayWithConfig('metrics', { metrics: { listen: '127.0.0.1:0' } });
    expect(cli.code).toBe(1);
    expect(idemLines(cli.stderr)).toEqual([
      expect.stringContaining('needs the package prom-client, which is not installed'),
    ]);
    expect(cli.stderr).toContain('`npm install prom-client`');
  });

  it('its types compile with skipLibCheck: false, without pg or @types/pg', async () => {
    writeFileSync(
      join(project, 'use.ts'),
      [
        "import { type ExecutionStore, Idem, MissingPackageError, OutcomeUnknownError, openStore, type StoreSpec } from 'idem';",
        "const spec: StoreSpec = { kind: 'postgres', url: 'postgres://idem@127.0.0.1/idem', pool: { max: 2 } };",
        "const store: ExecutionStore = await openStore({ kind: 'memory' });",
        'const idem: Idem = await Idem.open({ store });',
        'export const kinds = [idem, spec, OutcomeUnknownError, MissingPackageError];',
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

  it('`npm publish` stops until repository, homepage and bugs are filled (no URL is made up)', async () => {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(manifest.scripts.prepublishOnly).toBe('tsx scripts/release-fields.ts');
    const check = (fields: Record<string, unknown>) => {
      const path = join(work, 'release.json');
      writeFileSync(path, JSON.stringify({ name: 'idem', version: '0.1.0', ...fields }));
      return runInProject(process.execPath, [
        join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs'),
        join(REPO_ROOT, 'scripts/release-fields.ts'),
        path,
      ]);
    };
    const unfilled = await check({ homepage: '', bugs: {} });
    expect(unfilled.code).toBe(1);
    expect(unfilled.stderr).toContain('package.json has no repository, homepage, bugs');
    const filled = await check({
      repository: { type: 'git', url: 'git+https://example.invalid/idem.git' },
      homepage: 'https://example.invalid/idem',
      bugs: { url: 'https://example.invalid/idem/issues' },
    });
    expect(filled).toMatchObject({ code: 0, stderr: '' });
  });

  it('pg installed beside idem is the one it loads (a peer, found from the project)', async () => {
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', 'pg@8.23.1'], {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
    });
    const opened = JSON.parse((await runInProject(process.execPath, ['postgres.mjs'])).stdout);
    // Past the driver: nothing listens on port 1, so the store is unavailable, not missing.
    expect(opened).toMatchObject({ name: 'StoreUnavailableError', missing: false });
    expect(opened.message).toContain('ECONNREFUSED');
  }, 150_000);
});

/** `idem gateway --config` with `section` beside a stdio upstream; none of these starts serve. */
function gatewayWithConfig(name: string, section: Record<string, unknown>): Promise<Ran> {
  const config = join(work, `${name}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      data_dir: join(work, `data-${name}`),
      upstreams: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } },
      ...section,
    }),
  );
  return runInProject('npx', ['--no-install', 'idem', 'gateway', '--config', config]);
}
