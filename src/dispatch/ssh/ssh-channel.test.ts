import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PATIENTLY } from '../../../test/support/wait.js';
import { generateKey, startSshd, type TestSshd } from '../../demo/sshd.js';
import { InvalidInputError, NotDispatchedError, OutcomeUnknownError } from '../../errors.js';
import type { SshHost } from './host.js';
import { SshChannel, type SshToolSpec } from './ssh-channel.js';

let sshd: TestSshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(() => sshd?.stop());

let n = 0;
/** A fresh scratch directory (the host is this machine, so the test reads what the command did). */
function scratch(): string {
  const dir = join(sshd.dir, `case-${++n}`);
  mkdirSync(dir);
  return dir;
}

function host(overrides: Partial<SshHost> = {}): SshHost {
  return {
    name: 'test-host',
    host: sshd.host,
    port: sshd.port,
    user: sshd.user,
    credential: 'deploy-key',
    hostKey: sshd.hostKeyFingerprint,
    markerDir: join(sshd.dir, 'markers'),
    ...overrides,
  };
}

function channel(spec: Partial<SshToolSpec> & { command: string }, resolve = async () => sshd.privateKey) {
  return new SshChannel({ host: host(), timeoutMs: 20_000, ...spec }, resolve);
}

const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
let ids = 0;
const newId = () => `exe_TEST${Date.now()}${++ids}`;

describe('SSH channel at a real sshd: quoting', () => {
  const hostile = [
    '; touch CANARY',
    '$(touch CANARY)',
    '`touch CANARY`',
    'a\ntouch CANARY',
    "'; touch CANARY; '",
    '"; touch CANARY; "',
    '|| touch CANARY',
    '&& touch CANARY &',
    '> CANARY',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${…}, which must arrive unexpanded
    '$HOME ${HOME} ~ ~root * ? [a] {a,b}',
    'it\'s "quoted" \\ back\\slash !bang',
    '-n',
    '',
    '   leading and trailing spaces   ',
    'tab\there\r\ncrlf',
    'ünïcödé ✓',
  ];

  it('every hostile argument arrives as one word, byte for byte, and runs nothing of its own', async () => {
    const dir = scratch();
    const victim = join(dir, 'victim');
    mkdirSync(victim);
    const ssh = channel({ command: `cd ${dir} && printf '%s' {{value}}` });
    const values = [...hostile, `; rm -rf ${victim}`, `$(rm -rf ${victim})`];
    const results = await Promise.all(values.map((value) => ssh.run(newId(), ssh.command({ value }))));
    for (const [i, result] of results.entries()) {
      expect(result.isError, JSON.stringify(values[i])).toBeFalsy();
      expect((result.structuredContent as { stdout: string }).stdout).toBe(values[i]);
    }
    expect(existsSync(join(dir, 'CANARY'))).toBe(false);
    expect(existsSync(victim)).toBe(true);
  });

  it('numbers and booleans are words too; NUL, objects and missing arguments are refused before anything is sent', async () => {
    const ssh = channel({ command: 'printf "%s|%s" {{a}} {{b}}' });
    const result = await ssh.run(newId(), ssh.command({ a: 1.5, b: true }));
    expect((result.structuredContent as { stdout: string }).stdout).toBe('1.5|true');
    const refusal = (args: Record<string, unknown>) => {
      try {
        ssh.command(args);
      } catch (error) {
        return error instanceof InvalidInputError ? `${error.reason} ${error.message}` : String(error);
      }
      return 'accepted';
    };
    expect(refusal({ a: 'x\0; touch CANARY', b: 1 })).toMatch(/^unsafe_argument a NUL byte .*\(at a\)$/);
    expect(refusal({ a: { op: ';' }, b: 1 })).toMatch(/^unsafe_argument /);
    expect(refusal({ a: ['x', 'y'], b: 1 })).toMatch(/^unsafe_argument /);
    expect(refusal({ a: Number.NaN, b: 1 })).toMatch(/^unsafe_argument /);
    expect(refusal({ a: 'x' })).toMatch(/^missing_argument .*"b"/);
    expect(refusal({ a: 'x'.repeat(70_000), b: 1 })).toMatch(/^too_large /);
  });

  it('a template with a stray "{{" is refused when the tool is made', () => {
    expect(() => channel({ command: 'echo {{ not a name }}' })).toThrow(/not a placeholder/);
    expect(() => channel({ command: 'echo {{ok}} }}' })).toThrow(/not a placeholder/);
  });
});

describe('SSH channel at a real sshd: outcomes', () => {
  it('exit 0 is completed, another code failed (with stderr), unless okExitCodes says otherwise', async () => {
    const ssh = channel({ command: 'echo out; echo err >&2; exit {{code}}' });
    const ok = await ssh.run(newId(), ssh.command({ code: 0 }));
    expect(ok.isError).toBeFalsy();
    expect(ok.structuredContent).toMatchObject({ exit_code: 0, stdout: 'out\n', stderr: 'err\n' });
    const failed = await ssh.run(newId(), ssh.command({ code: 3 }));
    expect(failed.isError).toBe(true);
    expect(failed.content?.[0]).toMatchObject({
      text: expect.stringMatching(/^Exit code 3 .*\nstdout:\nout\n\nstderr:\nerr\n$/),
    });
    const lenient = channel({ command: 'exit {{code}}', okExitCodes: [0, 3] });
    expect((await lenient.run(newId(), lenient.command({ code: 3 }))).isError).toBeFalsy();
  });

  it('only the end of a long output is kept, and the answer says how much there was', async () => {
    const ssh = channel({
      command: 'head -c 100000 /dev/zero | tr "\\0" a; printf END',
      outputLimitBytes: 1000,
    });
    const result = await ssh.run(newId(), ssh.command({}));
    const content = result.structuredContent as { stdout: string; stdout_bytes: number };
    expect(content.stdout).toHaveLength(1000);
    expect(content.stdout.endsWith('aaaEND')).toBe(true);
    expect(content.stdout_bytes).toBe(100_003);
    expect(result.content?.[0]).toMatchObject({
      text: expect.stringContaining('(last 1000 of 100003 bytes)'),
    });
  });

  it('a known secret whose start the tail cut off leaves no part of it in the answer', async () => {
    const secret = 'Zq9vX7pL2mR4tW8zK3nB6cY1hJ5fD0gS2aE4uI7oP9wQ3eT6rU1y';
    // Every offset is src/identity/secret-cut.test.ts's; here the edges and the middle, at a real host.
    const results = await Promise.all(
      [1, 2, 3, 4, 26, 50, 51].map(async (kept) => {
        const ssh = new SshChannel(
          { host: host(), timeoutMs: 20_000, command: "printf '%s' {{out}}", outputLimitBytes: kept + 30 },
          async () => sshd.privateKey,
          () => [secret],
        );
        const out = `${'.'.repeat(40)}${secret}${'-'.repeat(30)}`;
        const result = await ssh.run(newId(), ssh.command({ out }));
        return { kept, stdout: (result.structuredContent as { stdout: string }).stdout };
      }),
    );
    for (const { kept, stdout } of results) {
      for (let j = 0; j + 3 <= secret.length; j++)
        expect(stdout, `${kept} of it kept`).not.toContain(secret.slice(j, j + 3));
      if (kept >= 3) expect(stdout).toBe(`[secret]${'-'.repeat(30)}`);
    }
  });

  it('a changed host key is refused before anything is sent, naming both fingerprints', async () => {
    const dir = scratch();
    const other = generateKey(dir, 'other_host_key');
    const ssh = new SshChannel(
      { host: host({ hostKey: other.fingerprint }), command: `echo ran >> ${dir}/count`, timeoutMs: 20_000 },
      async () => sshd.privateKey,
    );
    const error = await ssh.run(newId(), ssh.command({})).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotDispatchedError);
    expect((error as Error).message).toContain(
      `host key ${sshd.hostKeyFingerprint} is not the inventory's ${other.fingerprint}`,
    );
    expect(lines(join(dir, 'count'))).toEqual([]);
  });

  it('a key the host does not accept, a credential that cannot be resolved, a closed port: not executed', async () => {
    const dir = scratch();
    const stranger = generateKey(dir, 'stranger');
    const command = `echo ran >> ${dir}/count`;
    const refusedKey = channel({ command }, async () => readFileSync(stranger.path, 'utf8'));
    await expect(refusedKey.run(newId(), command)).rejects.toThrow(
      /Nothing was sent .*refused the key of credential "deploy-key"/,
    );
    const unresolved = channel({ command }, async () => {
      throw new Error('no such credential');
    });
    await expect(unresolved.run(newId(), command)).rejects.toThrow(NotDispatchedError);
    const hanging = new SshChannel(
      { host: host(), command, timeoutMs: 20_000, connectTimeoutMs: 200 },
      () => new Promise(() => {}),
    );
    await expect(hanging.run(newId(), command)).rejects.toThrow(
      /could not be resolved \(no answer within 200 ms\)/,
    );
    const garbage = channel({ command }, async () => 'not a key');
    await expect(garbage.run(newId(), command)).rejects.toThrow(/cannot be used/);
    const closed = new SshChannel(
      { host: host({ port: 1 }), command, timeoutMs: 20_000 },
      async () => sshd.privateKey,
    );
    await expect(closed.run(newId(), command)).rejects.toThrow(/Nothing was sent .*ECONNREFUSED/);
    expect(lines(join(dir, 'count'))).toEqual([]);
  });
});

describe('SSH channel at a real sshd: durable markers', () => {
  it('an id runs once: a second dispatch under it is handed the marker, and the probe reads it', async () => {
    const dir = scratch();
    const ssh = channel({ command: `echo ran >> ${dir}/count; echo hello` });
    const id = newId();
    expect(await ssh.probe(id)).toEqual({ outcome: 'unknown' });
    const first = await ssh.run(id, ssh.command({}));
    const again = await ssh.run(id, ssh.command({}));
    expect(again).toEqual(first);
    expect(lines(join(dir, 'count'))).toEqual(['ran']);
    expect(await ssh.probe(id)).toEqual({ outcome: 'completed', result: first });
    const marker = join(sshd.dir, 'markers', id);
    expect(readFileSync(join(marker, 'exit'), 'utf8')).toBe('0 6 0\n');
    expect(readdirSync(marker).sort()).toEqual(['exit', 'started', 'stderr', 'stdout']);
  });

  it('concurrent dispatches of one id: one mkdir wins, the rest are told it started and ran nothing', async () => {
    const dir = scratch();
    const gate = join(dir, 'gate');
    const ssh = channel({
      command: `echo ran >> ${dir}/count; while [ ! -e ${gate} ] && [ -d $(dirname ${gate}) ]; do sleep 0.05; done`,
    });
    const id = newId();
    const attempts = Array.from({ length: 5 }, () =>
      ssh.run(id, ssh.command({})).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      ),
    );
    // Those that lost the mkdir come back while the winner still runs.
    const settled: ({ error: unknown } | { result: unknown })[] = [];
    for (const attempt of attempts) void attempt.then((a) => settled.push(a));
    await vi.waitFor(() => expect(settled.length === 4).toBe(true), PATIENTLY);
    for (const lost of settled) expect('error' in lost && lost.error).toBeInstanceOf(OutcomeUnknownError);
    writeFileSync(gate, '');
    await Promise.all(attempts);
    expect(lines(join(dir, 'count'))).toEqual(['ran']);
  });

  it('a marker directory that cannot be created: not executed', async () => {
    const dir = scratch();
    writeFileSync(join(dir, 'not-a-dir'), '');
    const ssh = new SshChannel(
      {
        host: host({ markerDir: join(dir, 'not-a-dir', 'markers') }),
        command: `echo ran >> ${dir}/count`,
        timeoutMs: 20_000,
      },
      async () => sshd.privateKey,
    );
    await expect(ssh.run(newId(), ssh.command({}))).rejects.toThrow(/cannot be created .*not started/);
    expect(lines(join(dir, 'count'))).toEqual([]);
  });

  it('a timeout after sending is unknown; the command finishes anyway and the probe then reads its real outcome', async () => {
    const dir = scratch();
    const gate = join(dir, 'gate');
    const ssh = channel({
      command: `while [ ! -e ${gate} ] && [ -d $(dirname ${gate}) ]; do sleep 0.05; done; echo finished`,
      timeoutMs: 500,
    });
    const id = newId();
    await expect(ssh.run(id, ssh.command({}))).rejects.toThrow(OutcomeUnknownError);
    expect(await ssh.probe(id)).toEqual({ outcome: 'unknown' });
    writeFileSync(gate, '');
    const exitFile = join(sshd.dir, 'markers', id, 'exit');
    await vi.waitFor(() => expect(existsSync(exitFile)).toBe(true), PATIENTLY);
    const probed = await ssh.probe(id);
    expect(probed.outcome).toBe('completed');
    expect(probed.outcome === 'completed' && probed.result.structuredContent).toMatchObject({
      stdout: 'finished\n',
    });
  });

  it('a connection lost after sending is unknown; the command runs on and the probe then reads its real outcome', async () => {
    const dir = scratch();
    const gate = join(dir, 'gate');
    const ssh = channel({
      command: `echo ran >> ${dir}/count; while [ ! -e ${gate} ] && [ -d $(dirname ${gate}) ]; do sleep 0.05; done; echo survived`,
    });
    const id = newId();
    const pending = ssh.run(id, ssh.command({})).catch((error: unknown) => error);
    await vi.waitFor(() => expect(lines(join(dir, 'count')).length === 1).toBe(true), PATIENTLY);
    sshd.dropConnections();
    const error = await pending;
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as Error).message).toMatch(
      /^The command was sent to .*, then the connection (closed|failed)/,
    );
    writeFileSync(gate, '');
    await vi.waitFor(() => expect(existsSync(join(sshd.dir, 'markers', id, 'exit'))).toBe(true), PATIENTLY);
    const probed = await ssh.probe(id);
    expect(probed.outcome === 'completed' && probed.result.structuredContent).toMatchObject({
      stdout: 'survived\n',
    });
    expect(lines(join(dir, 'count'))).toEqual(['ran']);
  });

  it('finished markers past their retention are trimmed by the next run; a marker without an end is kept', async () => {
    const markerDir = join(scratch(), 'markers');
    const ssh = new SshChannel(
      { host: host({ markerDir }), command: 'true', timeoutMs: 20_000, markerRetentionDays: 2 },
      async () => sshd.privateKey,
    );
    const old = newId();
    const stuck = newId();
    const recent = newId();
    await ssh.run(old, 'true');
    await ssh.run(recent, 'true');
    mkdirSync(join(markerDir, stuck));
    writeFileSync(join(markerDir, stuck, 'started'), '');
    execFileSync('touch', [
      '-d',
      '3 days ago',
      join(markerDir, old, 'exit'),
      join(markerDir, stuck, 'started'),
    ]);
    await ssh.run(newId(), 'true');
    const left = readdirSync(markerDir);
    expect(left).not.toContain(old);
    expect(left).toContain(stuck);
    expect(left).toContain(recent);
  });
});
