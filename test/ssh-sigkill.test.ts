import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSshd, type TestSshd } from '../src/demo/sshd.js';
import { idemCodeOf, META } from '../src/executions/answers.js';
import { linesOf, startFixtureServer } from './support/fixture-server.js';
import { askUntilSettled } from './support/until-settled.js';
import { PATIENTLY } from './support/wait.js';

let sshd: TestSshd;
let dataDir: string;
beforeAll(async () => {
  sshd = await startSshd();
  dataDir = mkdtempSync(join(tmpdir(), 'idem-ssh-sigkill-'));
});
afterAll(async () => {
  await sshd?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function startServer() {
  const keyFile = join(sshd.dir, 'client_key');
  writeFileSync(keyFile, sshd.privateKey, { mode: 0o600 });
  return startFixtureServer('ssh-tool-server.ts', {
    IDEM_DATA_DIR: dataDir,
    SSH_PORT: String(sshd.port),
    SSH_USER: sshd.user,
    SSH_HOST_KEY: sshd.hostKeyFingerprint,
    SSH_KEY_FILE: keyFile,
    MARKER_DIR: join(sshd.dir, 'markers'),
    COUNTER_FILE: join(sshd.dir, 'count'),
    GATE_FILE: join(sshd.dir, 'gate'),
  });
}

const runs = () => linesOf(join(sshd.dir, 'count'));
const deploy = (client: Client) =>
  client.callTool({ name: 'deploy', arguments: { service: 'db' } }) as Promise<CallToolResult>;

describe('SSH action tool: the process SIGKILLed mid-command (SQLite, real sshd)', () => {
  it('a fresh process never runs it again: unknown while the marker has no end, the true outcome once it has', async () => {
    const first = await startServer();
    void deploy(first.client).catch(() => {});
    await vi.waitFor(() => expect(runs()).toHaveLength(1), PATIENTLY);
    process.kill(first.transport.pid as number, 'SIGKILL');
    await first.client.close().catch(() => {});
    const [ref] = readdirSync(join(sshd.dir, 'markers'));

    // The command still waits on the host. In flight until the dead holder's lease lapses (store clock),
    // then the marker is read: started, no end → unknown, and the re-send under the same id runs nothing.
    const second = await startServer();
    const answer = await askUntilSettled(() => deploy(second.client));
    expect(idemCodeOf(answer)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(answer._meta?.[META.executionId]).toBe(ref);
    expect(runs()).toHaveLength(1);

    // The command finishes on the host; the same call now reads its exit from the marker.
    writeFileSync(join(sshd.dir, 'gate'), '');
    await vi.waitFor(
      () => expect(existsSync(join(sshd.dir, 'markers', ref as string, 'exit'))).toBe(true),
      PATIENTLY,
    );
    const done = await deploy(second.client);
    expect(idemCodeOf(done)).toBeUndefined();
    expect(done.isError).toBeFalsy();
    expect(done._meta?.[META.executionId]).toBe(ref);
    expect(done.structuredContent).toMatchObject({ exit_code: 0, stdout: 'finished db\n' });
    expect(runs()).toEqual(['db']);
    await second.client.close();

    // The key was only ever in memory: no file of the store (SQLite, -wal, keys) holds any line of it.
    const keyLines = sshd.privateKey
      .split('\n')
      .filter((line) => line.length > 20 && !line.startsWith('-----'));
    for (const file of readdirSync(dataDir)) {
      const bytes = readFileSync(join(dataDir, file)).toString('latin1');
      for (const line of keyLines) expect(bytes.includes(line), file).toBe(false);
    }
  });
});
