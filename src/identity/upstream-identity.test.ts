import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Fingerprinter } from './fingerprint.js';
import { isLaunchVariable } from './launch-variables.js';
import { packageRunner, withoutVersion } from './package-runner.js';
import { serverRecord, type UpstreamDescription, upstreamIdentity } from './upstream-identity.js';

const fingerprinter = new Fingerprinter(randomBytes(32));
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A directory holding `files` (each an empty file), for arguments that name existing paths. */
function dirWith(...files: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-srv-'));
  dirs.push(dir);
  for (const file of files) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), '');
  }
  return dir;
}

const here = dirWith();
const identity = (upstream: UpstreamDescription, cwd = here) =>
  upstreamIdentity(fingerprinter, upstream, { cwd });
const memory = (env: Record<string, string> = {}, version = '') => ({
  command: 'npx',
  args: ['-y', `@modelcontextprotocol/server-memory${version}`],
  env: { PATH: '/usr/bin', HOME: '/home/me', MEMORY_FILE_PATH: '/srv/a.json', ...env },
});

describe('upstreamIdentity: one identity per server', () => {
  it('is a keyed digest, srv_…, the same for the same server (key order aside)', () => {
    expect(identity(memory())).toMatch(/^srv_[A-Za-z0-9_-]{43}$/);
    expect(identity(memory())).toBe(identity(memory()));
    const reordered = { ...memory(), env: Object.fromEntries(Object.entries(memory().env).reverse()) };
    expect(identity(reordered)).toBe(identity(memory()));
    // Keyed: another installation's key gives another digest, and no value is readable in it.
    expect(upstreamIdentity(new Fingerprinter(randomBytes(32)), memory(), { cwd: here })).not.toBe(
      identity(memory()),
    );
  });

  it('tells apart two servers one interpreter starts: another argument, another value of a server variable', () => {
    const base = identity(memory());
    expect(identity(memory({ MEMORY_FILE_PATH: '/srv/b.json' }))).not.toBe(base);
    expect(identity(memory({ GITHUB_TOKEN: 'ghp_x' }))).not.toBe(base);
    expect(identity({ ...memory(), args: ['-y', '@modelcontextprotocol/server-filesystem'] })).not.toBe(base);
    expect(identity({ command: 'node', args: ['a.mjs'] })).not.toBe(
      identity({ command: 'node', args: ['b.mjs'] }),
    );
    expect(identity({ command: 'node', args: ['a.mjs'] })).not.toBe(
      identity({ command: 'bun', args: ['a.mjs'] }),
    );
  });

  it('takes a script relative to the cwd as the file it names: another directory is another server', () => {
    const one = dirWith('a.mjs');
    const two = dirWith('a.mjs');
    const a = { command: 'node', args: ['a.mjs'] };
    expect(identity(a, one)).not.toBe(identity(a, two));
    // The same file however it is written; the upstream's own cwd before the gateway's.
    expect(identity({ command: 'node', args: ['./a.mjs'] }, one)).toBe(identity(a, one));
    expect(identity({ command: 'node', args: [join(one, 'a.mjs')] }, two)).toBe(identity(a, one));
    expect(identity({ ...a, cwd: one }, two)).not.toBe(identity({ ...a, cwd: two }, two));
    expect(identity({ command: 'node', args: ['--root=./a.mjs'] }, one)).not.toBe(
      identity({ command: 'node', args: ['--root=./a.mjs'] }, two),
    );
    // A command written as a path is a file too; a bare one is looked up on PATH.
    expect(identity({ command: './a.mjs' }, one)).not.toBe(identity({ command: './a.mjs' }, two));
    expect(identity({ command: 'node' }, one)).toBe(identity({ command: 'node' }, two));
    // An argument that names nothing on disk is kept as given (a name, a URL, a flag).
    expect(
      serverRecord({ command: 'node', args: ['x.mjs', '-y', 'https://a.example'] }, { cwd: one }),
    ).toEqual({
      kind: 'stdio',
      command: 'node',
      args: ['x.mjs', '-y', 'https://a.example'],
      cwd: null,
      env: {},
    });
  });

  it('keeps a symlinked deploy (current -> releases/N) one server across releases: resolve, not realpath', () => {
    const root = dirWith('releases/1/server.mjs', 'releases/2/server.mjs');
    const current = join(root, 'current');
    symlinkSync(join(root, 'releases/1'), current);
    const upstream = { command: 'node', args: ['current/server.mjs'] };
    const before = identity(upstream, root);
    unlinkSync(current);
    symlinkSync(join(root, 'releases/2'), current);
    expect(identity(upstream, root)).toBe(before);
  });

  it('leaves out what describes the launch: a restarted client or terminal keeps the identity', () => {
    const base = identity(
      memory({ VSCODE_PID: '101', SSH_AUTH_SOCK: '/tmp/ssh-a/agent.1', TERM_SESSION_ID: 'w0t0' }),
    );
    expect(
      identity(memory({ VSCODE_PID: '202', SSH_AUTH_SOCK: '/tmp/ssh-b/agent.2', TERM_SESSION_ID: 'w1t3' })),
    ).toBe(base);
    expect(identity(memory())).toBe(base);
    const launches: Record<string, string>[] = [
      { PATH: '/opt/bin:/usr/bin', HOME: '/root', PWD: '/x', OLDPWD: '/y', SHLVL: '3', _: '/usr/bin/env' },
      { TERM: 'xterm', TERM_PROGRAM: 'iTerm.app', COLORTERM: 'truecolor', LANG: 'C', LC_ALL: 'C', TZ: 'UTC' },
      { TMPDIR: '/var/folders/x', XDG_RUNTIME_DIR: '/run/user/2', DBUS_SESSION_BUS_ADDRESS: 'unix:a' },
      { WINDOWID: '7', TMUX: '/tmp/tmux', TMUX_PANE: '%3', DISPLAY: ':1', __CF_USER_TEXT_ENCODING: '0x1F5' },
      {
        __CFBundleIdentifier: 'com.anthropic.claudefordesktop',
        XPC_SERVICE_NAME: 'app.1',
        Apple_PubSub_Socket_Render: '/x',
      },
      {
        ELECTRON_RUN_AS_NODE: '1',
        CURSOR_TRACE_ID: 'abc',
        VSCODE_IPC_HOOK: '/tmp/v.sock',
        npm_lifecycle_event: 'x',
      },
      { INVOCATION_ID: 'f00', JOURNAL_STREAM: '8:1', SystemRoot: 'C:\\Windows', PROCESSOR_LEVEL: '6' },
    ];
    for (const launch of launches) expect(identity(memory(launch)), JSON.stringify(launch)).toBe(base);
  });

  it('keeps what the server is given on purpose, whatever its name looks like', () => {
    for (const name of [
      'MEMORY_FILE_PATH',
      'NPM_TOKEN',
      'DATABASE_URL',
      'NODE_OPTIONS',
      'IDEM_DATA_DIR',
      'API_KEY',
    ])
      expect(isLaunchVariable(name), name).toBe(false);
    expect(isLaunchVariable('npm_config_cache')).toBe(true);
    expect(isLaunchVariable('Path')).toBe(true);
  });

  it('keeps a server across an upgrade of its package: a runner’s package argument loses its version', () => {
    const base = identity(memory());
    expect(identity(memory({}, '@2025.4.25'))).toBe(base);
    expect(identity(memory({}, '@latest'))).toBe(base);
    expect(identity(memory({}, '@^1'))).toBe(base);
    const same = (a: string[], b: string[], command = 'npx') =>
      expect(identity({ command, args: a }), `${command} ${a.join(' ')}`).toBe(
        identity({ command, args: b }),
      );
    same(['-y', 'pkg@1.0.0', '--port', '3'], ['-y', 'pkg', '--port', '3']);
    same(['-y', '-p', '@s/pkg@1', 'bin'], ['-y', '-p', '@s/pkg@2', 'bin']);
    same(['--yes', '--package=@s/pkg@1', 'bin'], ['--yes', '--package=@s/pkg', 'bin']);
    same(['exec', '--yes', '--', 'pkg@1'], ['exec', '--yes', '--', 'pkg@2'], 'npm');
    same(['dlx', 'pkg@1'], ['dlx', 'pkg'], 'pnpm');
    same(['pkg@1'], ['pkg@2'], 'bunx');
    same(['x', 'pkg@1'], ['x', 'pkg'], 'bun');
    same(['dlx', '-q', 'pkg@1'], ['dlx', '-q', 'pkg'], 'yarn');
    same(['mcp-server-fetch==0.6.2'], ['mcp-server-fetch'], 'uvx');
    same(['mcp-server-fetch@latest'], ['mcp-server-fetch'], 'uvx');
    same(
      ['--from', 'mcp-server-git>=1.0', 'mcp-server-git'],
      ['--from', 'mcp-server-git', 'mcp-server-git'],
      'uvx',
    );
    same(['--python', '3.12', 'tool==1'], ['--python', '3.12', 'tool'], 'uvx');
    same(['run', 'pkg==1.2'], ['run', 'pkg'], 'pipx');
    same(['run', '--spec', 'pkg[x]==1.2', 'app'], ['run', '--spec', 'pkg[x]', 'app'], 'pipx');
    same(['-y', 'pkg@1'], ['-y', 'pkg@2'], '/usr/local/bin/npx');
    same(['-y', 'pkg@1'], ['-y', 'pkg@2'], 'npx.cmd');
  });

  it('leaves every other argument as given: another package, a server argument with an @, a non-runner', () => {
    const differ = (a: string[], b: string[], command = 'npx') =>
      expect(identity({ command, args: a }), `${command} ${a.join(' ')}`).not.toBe(
        identity({ command, args: b }),
      );
    differ(['-y', 'pkg@1'], ['-y', 'other@1']);
    differ(['-y', '@s/pkg'], ['-y', '@t/pkg']);
    differ(['-y', 'ssh-server', 'deploy@host-a'], ['-y', 'ssh-server', 'deploy@host-b']);
    differ(['-y', 'pkg', 'name@1'], ['-y', 'pkg', 'name@2']);
    differ(['pkg@1.mjs'], ['pkg@2.mjs'], 'node');
    differ(['run', 'pkg@1'], ['run', 'pkg@2'], 'npm');
    differ(['--python', '3.11', 'tool'], ['--python', '3.12', 'tool'], 'uvx');
  });

  it('reads a URL upstream by its normalised URL and its header values', () => {
    const url = (u: string, headers?: Record<string, string>) =>
      identity(headers ? { url: u, headers } : { url: u });
    const base = url('https://mcp.example.com/mcp', { Authorization: 'Bearer a' });
    expect(url('HTTPS://MCP.example.com:443/mcp#x', { authorization: 'Bearer a' })).toBe(base);
    expect(url('https://mcp.example.com/mcp', { Authorization: 'Bearer b' })).not.toBe(base);
    expect(url('https://mcp.example.com/mcp')).not.toBe(base);
    expect(url('https://mcp.example.com/other', { Authorization: 'Bearer a' })).not.toBe(base);
    expect(url('https://mcp.example.com:8443/mcp', { Authorization: 'Bearer a' })).not.toBe(base);
    expect(url('http://127.0.0.1:3001/mcp')).not.toBe(url('http://127.0.0.1:3002/mcp'));
  });

  it("takes the operator's identity alone when given: it wins over everything that runs", () => {
    const named = (upstream: UpstreamDescription) => identity({ ...upstream, identity: 'memory-main' });
    expect(named(memory())).toBe(named({ command: 'node', args: ['/opt/memory/index.js'] }));
    expect(named(memory())).toBe(named({ url: 'https://memory.internal/mcp' }));
    expect(named(memory())).toBe(named(memory({ MEMORY_FILE_PATH: '/elsewhere.json' })));
    expect(named(memory())).not.toBe(identity(memory()));
    expect(identity({ ...memory(), identity: 'a' })).not.toBe(identity({ ...memory(), identity: 'b' }));
  });
});

describe('packageRunner', () => {
  it('finds the package a runner runs, and no package where the command is not a runner', () => {
    expect(packageRunner('npx', ['-y', '@s/p@1', '--x', 'y'])).toEqual({
      ecosystem: 'npm',
      packages: [{ index: 1, prefix: '', spec: '@s/p@1' }],
      runs: 1,
    });
    expect(packageRunner('uvx', ['--from', 'a==1', 'b'])?.packages.map((p) => p.spec)).toEqual(['a==1', 'b']);
    expect(packageRunner('pnpm', ['install'])).toBeUndefined();
    expect(packageRunner('bun', ['x.ts'])).toBeUndefined();
    expect(packageRunner('node', ['x.mjs'])).toBeUndefined();
  });

  it('drops a version, and nothing else', () => {
    expect(withoutVersion('@scope/name@1.2.3', 'npm')).toBe('@scope/name');
    expect(withoutVersion('name@latest', 'npm')).toBe('name');
    expect(withoutVersion('@scope/name', 'npm')).toBe('@scope/name');
    expect(withoutVersion('github:org/repo#v1', 'npm')).toBe('github:org/repo#v1');
    expect(withoutVersion('./local@1', 'npm')).toBe('./local@1');
    expect(withoutVersion('name==1.2', 'python')).toBe('name');
    expect(withoutVersion('name[extra]>=1,<2', 'python')).toBe('name[extra]');
    expect(withoutVersion('name@0.6', 'python')).toBe('name');
    expect(withoutVersion('name', 'python')).toBe('name');
  });
});
