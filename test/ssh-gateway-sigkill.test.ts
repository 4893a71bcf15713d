/**
 * `idem gateway` SIGKILLed while an SSH action tool's command runs on the
 * host, then restarted on the same data directory: the same call never runs
 * the command a second time. The marker on the host decides — started and no
 * end → the outcome is unknown; once the command ends, its exit code → the
 * true outcome. (test/ssh-sigkill.test.ts shows the same for the library.)
 */
import {
  chmodSync,
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
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSshd, type TestSshd } from '../src/demo/sshd.js';
import { idemCodeOf, META } from '../src/executions/answers.js';
import { countingUpstream } from './support/counting-upstream.js';
import { mcpClient, startGatewayProcess } from './support/gateway-process.js';
import { askUntilSettled } from './support/until-settled.js';
import { PATIENTLY } from './support/wait.js';

let sshd: TestSshd;
let root: string;
beforeAll(async () => {
  sshd = await startSshd();
  root = mkdtempSync(join(tmpdir(), 'idem-ssh-gateway-sigkill-'));
});
afterAll(async () => {
  await sshd?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

describe('gateway SIGKILLed while an SSH action command runs (SQLite, real sshd)', {
  timeout: 150_000,
}, () => {
  it('the restarted gateway runs nothing again: unknown while the marker has no end, the true outcome once it has', async () => {
    const dataDir = mkdtempSync(join(root, 'data-'));
    const work = join(sshd.dir, 'gateway-sigkill');
    mkdirSync(work);
    const keyFile = join(dataDir, 'deploy.key');
    writeFileSync(keyFile, sshd.privateKey);
    chmodSync(keyFile, 0o600);
    const gate = join(work, 'gate');
    const markers = join(work, 'markers');
    const config = {
      data_dir: dataDir,
      upstreams: { counter: countingUpstream(dataDir) },
      credentials: { 'deploy-key': { file: keyFile } },
      ssh_hosts: {
        web: {
          host: sshd.host,
          port: sshd.port,
          user: sshd.user,
          credential: 'deploy-key',
          host_key: sshd.hostKeyFingerprint,
          marker_dir: markers,
        },
      },
      ssh_tools: {
        deploy: {
          description: 'Deploy a service on web (once).',
          host: 'web',
          input_schema: {
            type: 'object',
            properties: { service: { type: 'string' } },
            required: ['service'],
          },
          // One line per run on the host; then it waits for the test's gate (or the directory's removal).
          command: `printf '%s\\n' {{service}} >> ${work}/runs; while [ ! -e ${gate} ] && [ -d ${work} ]; do sleep 0.05; done; echo finished {{service}}`,
          contract: { replay: 'keyed', timeout: '60s', lease: '1s' },
        },
      },
    };
    const configPath = join(dataDir, 'idem.json');
    const start = async () => {
      const gateway = await startGatewayProcess(config, configPath);
      cleanups.push(() => gateway.kill('SIGKILL'));
      // The same client name from the same machine: the same actor, as a restarted agent is.
      const client = await mcpClient(gateway.url, 'restarting-agent');
      cleanups.push(() => client.close());
      return { gateway, client };
    };
    const runs = () => {
      const file = join(work, 'runs');
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
    };
    const deploy = (client: Client) =>
      client.callTool({ name: 'deploy', arguments: { service: 'db' } }) as Promise<CallToolResult>;

    const first = await start();
    void deploy(first.client).catch(() => {});
    await vi.waitFor(() => expect(runs(), 'the command started on the host').toHaveLength(1), PATIENTLY);
    await first.gateway.kill('SIGKILL');
    const [ref] = readdirSync(markers);
    expect(ref).toBeDefined();

    // In flight until the dead holder's lease lapses (by the store's clock); then the marker is
    // read: started, no end → unknown, and nothing is sent to the host again.
    const second = await start();
    const answer = await askUntilSettled(() => deploy(second.client));
    expect(idemCodeOf(answer)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(answer._meta?.[META.executionId]).toBe(ref);
    expect(runs()).toEqual(['db']);

    // The command ends on the host; the same call now reads its exit code from the marker.
    writeFileSync(gate, '');
    await vi.waitFor(
      () => expect(existsSync(join(markers, ref as string, 'exit')), 'the marker has its exit').toBe(true),
      PATIENTLY,
    );
    const done = await deploy(second.client);
    expect(idemCodeOf(done)).toBeUndefined();
    expect(done.isError).toBeFalsy();
    expect(done._meta?.[META.executionId]).toBe(ref);
    expect(done.structuredContent).toMatchObject({ exit_code: 0, stdout: 'finished db\n' });
    expect(runs()).toEqual(['db']);
  });
});
