/**
 * SSH action tools through the in-process gateway, at a real sshd on
 * loopback: declared under ssh_hosts:/ssh_tools: with the private key by
 * credential NAME, listed beside the upstream's tools, run at most once per
 * intent (counted on the host), hostile arguments carried as one word or
 * refused before anything is claimed, and the key found in no stored byte.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSshd, type TestSshd } from '../../src/demo/sshd.js';
import { ConfigError } from '../../src/errors.js';
import { META } from '../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { lintGateway } from '../../src/gateway/lint.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

let sshd: TestSshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(async () => {
  await sshd?.stop();
  removeTemporaries();
});
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let cases = 0;
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

function configFor(dataDir: string, work: string, extra: Record<string, unknown> = {}) {
  const keyFile = join(dataDir, 'deploy.key');
  writeFileSync(keyFile, sshd.privateKey);
  chmodSync(keyFile, 0o600);
  return GatewayConfigSchema.parse({
    data_dir: dataDir,
    listen: { http: { host: '127.0.0.1', port: 0 } },
    upstreams: { counter: countingUpstream(freshDir('ssh-tools-counts')) },
    credentials: { 'deploy-key': { file: keyFile } },
    ssh_hosts: {
      web: {
        host: sshd.host,
        port: sshd.port,
        user: sshd.user,
        credential: 'deploy-key',
        host_key: sshd.hostKeyFingerprint,
        marker_dir: join(work, 'markers'),
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
        // Each run leaves a line on the host, then waits for the test's release (or the directory's removal).
        command: `printf '%s\\n' {{service}} >> ${work}/runs; while [ ! -e ${work}/release ] && [ -d ${work} ]; do sleep 0.05; done; printf 'deployed %s' {{service}}`,
        contract: { replay: 'keyed', timeout: '30s' },
      },
    },
    ...extra,
  });
}

async function start() {
  const dataDir = freshDir('ssh-tools');
  const work = join(sshd.dir, `gateway-${++cases}`);
  mkdirSync(work);
  const gateway = await Gateway.start(configFor(dataDir, work), {
    version: 'test',
    upstreamStderr: 'ignore',
  });
  const { url } = await gateway.serveHttp();
  cleanups.push(() => gateway.close());
  const client = new Client({ name: 'ssh-tools-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  return { gateway, client, dataDir, work, runs: () => lines(join(work, 'runs')) };
}

describe('SSH action tools in the gateway, at a real sshd', () => {
  it('are listed, run once for concurrent identical calls, replay, and show channel, target and credential name', async () => {
    const { client, dataDir, work, runs, gateway } = await start();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['count', 'deploy', 'idem_execution_status']),
    );
    expect(tools.find((t) => t.name === 'deploy')?.inputSchema.required).toEqual(['service']);

    const args = { service: 'api' };
    const both = Promise.all([call(client, 'deploy', args), call(client, 'deploy', args)]);
    await vi.waitFor(() => expect(runs().length > 0).toBe(true), PATIENTLY);
    writeFileSync(join(work, 'release'), '');
    const answers = await both;
    const fresh = answers.find((r) => !r.isError);
    expect(fresh?.structuredContent).toMatchObject({ exit_code: 0, stdout: 'deployed api' });
    expect(runs()).toEqual(['api']);

    const replay = await call(client, 'deploy', args);
    expect(replay._meta?.[META.replayed]).toBe(true);
    expect(replay.structuredContent).toMatchObject({ exit_code: 0, stdout: 'deployed api' });
    expect(runs()).toEqual(['api']);

    const ref = fresh?._meta?.[META.executionId] as string;
    const action = {
      channel: 'ssh',
      target: `ssh://${sshd.user}@${sshd.host}:${sshd.port}`,
      credential: 'deploy-key',
    };
    const status = await call(client, 'idem_execution_status', { ref });
    expect(status._meta?.[META.action]).toEqual(action);
    // The marker on the host carries the execution id and its exit.
    expect(readFileSync(join(work, 'markers', ref, 'exit'), 'utf8')).toMatch(/^0 /);

    const keyLine = sshd.privateKey.split('\n')[1] as string;
    expect(keyLine.length).toBeGreaterThan(20);
    const stored = readdirSync(dataDir)
      .filter((f) => f.startsWith('idem.db'))
      .map((f) => readFileSync(join(dataDir, f)));
    await gateway.close();
    for (const bytes of stored) expect(bytes.includes(Buffer.from(keyLine))).toBe(false);
    const shown = await runIdem(['executions', 'show', ref, '--db', join(dataDir, 'idem.db'), '--json'], {
      dataDir,
    });
    expect(JSON.parse(shown.stdout).action).toMatchObject(action);
  });

  it('carry a hostile argument as one word, and refuse one quoting cannot carry before anything is claimed', async () => {
    const { client, work, runs } = await start();
    writeFileSync(join(work, 'release'), '');
    const hostile = `x; touch ${work}/CANARY $(touch ${work}/CANARY2) \`touch ${work}/CANARY3\``;
    const carried = await call(client, 'deploy', { service: hostile });
    expect(carried.structuredContent).toMatchObject({ exit_code: 0, stdout: `deployed ${hostile}` });
    expect(runs()).toEqual([hostile]);

    const refused = await call(client, 'deploy', { service: `a\u0000; touch ${work}/CANARY` });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused)).toContain('IDEM_INVALID_INPUT');
    expect(refused._meta?.[META.executionId]).toBeUndefined();
    expect(runs()).toEqual([hostile]);
    for (const canary of ['CANARY', 'CANARY2', 'CANARY3']) expect(existsSync(join(work, canary))).toBe(false);
  });
});

describe('SSH action tools refused before anything ran', () => {
  it('are `failed` and retired (reason not_dispatched): IDEM_NOT_EXECUTED, and the same call is a fresh attempt', async () => {
    const dataDir = freshDir('ssh-tools-refused');
    const work = join(sshd.dir, `gateway-${++cases}`);
    mkdirSync(work);
    const base = configFor(dataDir, work);
    // Nothing listens on port 1 of loopback: the connection is refused before anything is sent.
    const config = GatewayConfigSchema.parse({
      ...base,
      ssh_hosts: { ...base.ssh_hosts, closed: { ...base.ssh_hosts?.web, port: 1 } },
      ssh_tools: { ...base.ssh_tools, deploy_closed: { ...base.ssh_tools?.deploy, host: 'closed' } },
    });
    const gateway = await Gateway.start(config, { version: 'test', upstreamStderr: 'ignore' });
    cleanups.push(() => gateway.close());
    const { url } = await gateway.serveHttp();
    const client = new Client({ name: 'ssh-tools-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    cleanups.push(() => client.close());
    const answers = [];
    for (let i = 0; i < 2; i++) answers.push(await call(client, 'deploy_closed', { service: 'api' }));
    const refs = answers.map((a) => a._meta?.[META.executionId] as string);
    for (const answer of answers) expect(JSON.stringify(answer)).toContain('IDEM_NOT_EXECUTED');
    expect(refs[0]).not.toBe(refs[1]);
    expect(lines(join(work, 'runs'))).toEqual([]);
    await gateway.close();

    const db = join(dataDir, 'idem.db');
    const listed = await runIdem(['executions', 'list', '--tool', 'deploy_closed', '--db', db, '--json'], {
      dataDir,
    });
    expect(JSON.parse(listed.stdout).map((r: { state: string }) => r.state)).toEqual(['failed', 'failed']);
    const shown = await runIdem(['executions', 'show', refs[0] as string, '--db', db, '--json'], { dataDir });
    const outcome = JSON.parse(shown.stdout).timeline.find((e: { kind: string }) => e.kind === 'outcome');
    expect(outcome.detail).toMatchObject({ state: 'failed', reason: 'not_dispatched' });
  });
});

describe('SSH action tools in the config', () => {
  it('refuse to start with an undeclared host or credential, a placeholder not in the schema, or replay read_only', async () => {
    const dataDir = freshDir('ssh-tools-bad');
    const work = freshDir('ssh-tools-bad-work');
    const good = configFor(dataDir, work);
    const deploy = good.ssh_tools?.deploy;
    const web = good.ssh_hosts?.web;
    const variants: Array<[Record<string, unknown>, string]> = [
      [
        { ssh_tools: { deploy: { ...deploy, host: 'nope' } } },
        'host "nope" is not declared under ssh_hosts:',
      ],
      [
        { ssh_hosts: { web: { ...web, credential: 'other' } } },
        'credential "other" (of ssh_hosts.web) is not declared',
      ],
      [
        { ssh_tools: { deploy: { ...deploy, command: 'echo {{version}}' } } },
        'the command uses {{version}}, which input_schema',
      ],
      [
        { ssh_tools: { deploy: { ...deploy, contract: { replay: 'read_only' } } } },
        'replay read_only has no execution id',
      ],
      [
        { ssh_tools: { deploy: { ...deploy, marker_retention: '36h' } } },
        'marker_retention must be whole days',
      ],
    ];
    for (const [extra, message] of variants) {
      const config = GatewayConfigSchema.parse({ ...good, store: { kind: 'memory' }, ...extra });
      const started = Gateway.start(config, { version: 'test' });
      await expect(started).rejects.toBeInstanceOf(ConfigError);
      await expect(started).rejects.toThrow(`ssh_tools.deploy: ${message}`);
    }
    expect(() =>
      GatewayConfigSchema.parse({ ...good, ssh_hosts: { web: { ...web, host_key: 'MD5:aa:bb' } } }),
    ).toThrow(/ssh-keygen -l/);
  });

  it('idem lint names an SSH tool whose key cannot be resolved now', async () => {
    const dataDir = freshDir('ssh-tools-lint');
    const good = configFor(dataDir, freshDir('ssh-tools-lint-work'));
    const config = GatewayConfigSchema.parse({
      ...good,
      store: { kind: 'memory' },
      credentials: { 'deploy-key': { env: 'IDEM_TEST_SSH_KEY_UNSET' } },
    });
    const findings = await lintGateway(config, 'test');
    expect(findings.map((f) => f.message)).toContainEqual(
      expect.stringContaining('deploy: credential "deploy-key" cannot be resolved'),
    );
  });
});
