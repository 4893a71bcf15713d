import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import { openStore } from '../../src/store/index.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

/**
 * A call that arrives while its upstream restarts is answered IDEM_NOT_EXECUTED
 * (safe to retry), never "Unknown tool": the catalog survives the restart, and
 * a tool that could not be listed because its upstream is down is not called
 * unknown.
 */
const running: RunningGateway[] = [];
const processes: GatewayProcess[] = [];
const clients: Client[] = [];
afterAll(async () => {
  for (const gateway of processes) await gateway.kill();
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of running) await gateway.close();
  removeTemporaries();
});

/** The crashing fixture as a stdio upstream counting into `dir` (starts.log, effects.log, refuse-start). */
function crashingUpstream(dir: string) {
  mkdirSync(dir, { recursive: true });
  return {
    command: process.execPath,
    args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/crashing-server.ts')), '--dir', dir],
    cwd: REPO_ROOT,
    // The last start is the process serving (the tests kill it): none is started ahead for a next session.
    spare: false,
  };
}

const startsOf = (dir: string) =>
  existsSync(join(dir, 'starts.log'))
    ? readFileSync(join(dir, 'starts.log'), 'utf8').split('\n').filter(Boolean).map(Number)
    : [];
const effectsOf = (dir: string) =>
  existsSync(join(dir, 'effects.log')) ? readFileSync(join(dir, 'effects.log'), 'utf8').split('\n') : [];

/** Kills the running upstream and keeps it from coming back until `allowStart`. */
function killAndHold(dir: string): void {
  writeFileSync(join(dir, 'refuse-start'), '');
  process.kill(startsOf(dir).at(-1) as number, 'SIGKILL');
}
const allowStart = (dir: string) => unlinkSync(join(dir, 'refuse-start'));

async function connect(gateway: RunningGateway): Promise<Client> {
  const client = new Client({ name: 'agent', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  clients.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

describe('a call while its upstream restarts', () => {
  it('gets IDEM_NOT_EXECUTED even when the session never listed the tools, then runs once the upstream is back', async () => {
    const dir = freshDir('restart-single');
    const gateway = await startHttpGateway({
      upstreams: { flaky: crashingUpstream(dir) },
      tools: { act: { replay: 'status', scope: { business_key: 'key' } } },
    });
    running.push(gateway);
    const client = await connect(gateway);
    await vi.waitFor(() => expect(startsOf(dir).length, 'the upstream to start').toBe(1), PATIENTLY);
    killAndHold(dir);

    const whileDown = await call(client, 'act', { key: 'while-down' });
    expect(idemCodeOf(whileDown)).toBe('IDEM_NOT_EXECUTED');
    expect(effectsOf(dir)).not.toContain('while-down');
    // A tool no upstream has is still unknown once the upstreams are up; while one is down, nobody can tell.
    await expect(call(client, 'no_such_tool', {})).resolves.toMatchObject({ isError: true });

    allowStart(dir);
    let answer: CallToolResult | undefined;
    await vi.waitFor(
      async () => {
        answer = await call(client, 'act', { key: 'while-down' });
        if (answer.isError) expect(idemCodeOf(answer)).toBe('IDEM_NOT_EXECUTED');
        expect(!answer.isError, 'the restarted upstream to serve').toBe(true);
      },
      { ...PATIENTLY, timeout: 60_000 },
    );
    expect(effectsOf(dir).filter((k) => k === 'while-down')).toHaveLength(1);
    await expect(call(client, 'no_such_tool', {})).rejects.toThrow(/Unknown tool/);
  }, 120_000);

  it('with several upstreams: tools/list keeps the tools of the one that is down, and its calls get IDEM_NOT_EXECUTED', async () => {
    const dirA = freshDir('restart-a');
    const dirB = freshDir('restart-b');
    const gateway = await startHttpGateway({
      upstreams: { a: crashingUpstream(dirA), b: crashingUpstream(dirB) },
      tools: {
        a__act: { replay: 'status', scope: { business_key: 'key' } },
        b__act: { replay: 'status', scope: { business_key: 'key' } },
      },
    });
    running.push(gateway);
    const client = await connect(gateway);
    const listed = async () => (await client.listTools()).tools.map((t) => t.name).sort();
    expect(await listed()).toEqual(['a__act', 'b__act', 'idem_execution_status']);
    await vi.waitFor(() => expect(startsOf(dirA).length, 'upstream a to start').toBe(1), PATIENTLY);
    killAndHold(dirA);
    let probes = 0;
    await vi.waitFor(async () => {
      // A fresh key each time: a probe sent as the upstream died is unknown, and would stay so.
      const answer = await call(client, 'a__act', { key: `probe-${probes++}` });
      expect(idemCodeOf(answer), 'the gateway to notice').toBe('IDEM_NOT_EXECUTED');
    }, PATIENTLY);

    expect(await listed()).toEqual(['a__act', 'b__act', 'idem_execution_status']);
    expect(idemCodeOf(await call(client, 'a__act', { key: 'a-while-down' }))).toBe('IDEM_NOT_EXECUTED');
    expect((await call(client, 'b__act', { key: 'b-meanwhile' })).isError).toBeFalsy();
    expect(effectsOf(dirA)).not.toContain('a-while-down');
    expect(effectsOf(dirB)).toContain('b-meanwhile');
    allowStart(dirA);
  }, 120_000);
});

describe('an upstream that is restarted', () => {
  it('is reported: one line on stderr and one sessions-journal row per restart, with the reason and the attempt', async () => {
    const dir = freshDir('restart-report');
    const dataDir = freshDir('restart-report-data');
    const gateway = await startGatewayProcess(
      {
        data_dir: dataDir,
        upstreams: { flaky: crashingUpstream(dir) },
        tools: { act: { replay: 'status', scope: { business_key: 'key' } } },
        metrics: { listen: '127.0.0.1:0' },
      },
      join(dataDir, 'idem.json'),
    );
    processes.push(gateway);
    const client = await mcpClient(gateway.url, 'restart-agent');
    clients.push(client);
    expect(idemCodeOf((await call(client, 'act', { key: 'crash', crash: true })) as CallToolResult)).toBe(
      'IDEM_OUTCOME_UNKNOWN',
    );
    let tries = 0;
    await vi.waitFor(async () => {
      expect(
        !(await call(client, 'act', { key: `after-${tries++}` })).isError,
        'the restarted upstream to serve',
      ).toBe(true);
    }, PATIENTLY);
    process.kill(startsOf(dir).at(-1) as number, 'SIGKILL');
    await vi.waitFor(() => expect(startsOf(dir).length, 'the second restart').toBe(3), PATIENTLY);
    await vi.waitFor(
      () => expect(/killed by SIGKILL/.test(gateway.stderr()), 'both restarts on stderr').toBe(true),
      PATIENTLY,
    );

    const lines = gateway
      .stderr()
      .split('\n')
      .filter((line) => line.includes('upstream flaky restarted'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/attempt 1, after \d+ ms\): exited with code 1/);
    expect(lines[1]).toMatch(/attempt 1, after \d+ ms\): killed by SIGKILL/);
    // The same two restarts in the gateway's metrics.
    const metricsUrl = /metrics on (http:\S+)/.exec(gateway.stderr())?.[1];
    const metrics = await (await fetch(metricsUrl as string)).text();
    expect(metrics).toMatch(/^idem_upstream_restarts_total\{upstream="flaky"\} 2$/m);

    const store = await openStore({ kind: 'sqlite', path: join(dataDir, 'idem.db') });
    try {
      const restarts = (await store.readJournal(0, 1000, 'sessions')).filter(
        (e) => e.kind === 'upstream_restart',
      );
      expect(restarts.map((e) => e.detail)).toEqual([
        expect.objectContaining({ upstream: 'flaky', attempt: 1, reason: 'exited with code 1' }),
        expect.objectContaining({ upstream: 'flaky', attempt: 1, reason: 'killed by SIGKILL' }),
      ]);
      const start = (await store.readJournal(0, 1000, 'sessions')).find((e) => e.kind === 'session_start');
      // Each row belongs to the agent run whose upstream it was.
      expect(restarts.every((e) => e.requestRef === start?.requestRef && e.actor === start?.actor)).toBe(
        true,
      );
    } finally {
      await store.close();
    }
    // The new rows chain like every other: the journal still verifies.
    const verified = await runIdem(['audit', 'verify', '--db', join(dataDir, 'idem.db')], { dataDir });
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 120_000);
});
