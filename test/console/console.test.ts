/**
 * The operator console in a real headless Chromium (Debian's package, driven by
 * playwright-core), against `idem console` — its own process — over the SQLite
 * store that an `idem gateway` process wrote to with real MCP traffic. The
 * CLI, as its own process, checks that the console's decisions are the store's.
 * Executions are counted on the far side, by the counting upstream.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import parsePrometheus from 'parse-prometheus-text-format';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import { executionsOf } from '../gateway/fixtures/counting-server.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { IDEM_CLI } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { rawRequest } from '../support/raw-http.js';
import { runIdem } from '../support/run-cli.js';

const CHROMIUM = process.env.IDEM_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOTS = join(REPO_ROOT, 'artifacts/console');
const TOKEN = 'console-test-token-0123456789abcdef';

const work = mkdtempSync(join(tmpdir(), 'idem-console-'));
const counts = join(work, 'counts');
const dataDir = join(work, 'data');
const db = join(dataDir, 'idem.db');
mkdirSync(counts);
mkdirSync(dataDir);

const upstream = {
  command: process.execPath,
  args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/counting-server.ts')), '--dir', counts],
  cwd: REPO_ROOT,
};
const config = {
  data_dir: dataDir,
  // Two names for one counting server: the same tool with and without approval.
  upstreams: { counter: upstream, approver: upstream },
  tools: {
    counter__count: { replay: 'status', scope: { business_key: 'key' } },
    approver__count: { replay: 'status', approval: 'every_call', attach_window: '1h', timeout: '90s' },
  },
  metrics: { listen: '127.0.0.1:0' },
  // The gateway serves a console too (its /metrics behind the operator token).
  console: { listen: '127.0.0.1:0' },
  sweep_interval: '1h',
};

let gateway: GatewayProcess;
let consoleProcess: ChildProcess | undefined;
let consoleUrl = '';
let metricsUrl = '';
let gatewayConsoleUrl = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;
const clients: Client[] = [];
const refs: Record<string, string> = {};

const idem = (args: string[]) => runIdem(args, { dataDir });
const refOf = (r: CallToolResult) => r._meta?.['io.idem/execution-id'] as string;
const call = (client: Client, name: string, args: Record<string, unknown>, signal?: AbortSignal) =>
  client.callTool({ name, arguments: args }, undefined, {
    timeout: 60_000,
    ...(signal ? { signal } : {}),
  }) as Promise<CallToolResult>;

async function agent(name: string): Promise<Client> {
  const client = await mcpClient(gateway.url, name);
  clients.push(client);
  return client;
}

/** `idem console` as an operator runs it; resolves with the URL it prints. */
async function startConsoleProcess(): Promise<string> {
  const child = spawn(process.execPath, [IDEM_CLI, 'console', '--db', db, '--listen', '127.0.0.1:0'], {
    cwd: REPO_ROOT,
    env: { ...process.env, IDEM_CONSOLE_TOKEN: TOKEN },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  consoleProcess = child;
  let stderr = '';
  return new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /console: on (http:\S+)/.exec(stderr);
      if (match) resolve((match[1] as string).replace(/\/$/, ''));
    });
    child.once('exit', (code) => reject(new Error(`idem console exited with ${code}:\n${stderr}`)));
  });
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium; .ci/run does) or set IDEM_CHROMIUM`,
    );
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  gateway = await startGatewayProcess(config, join(work, 'idem.json'), {
    env: { IDEM_CONSOLE_TOKEN: TOKEN },
  });
  [metricsUrl, gatewayConsoleUrl] = await vi.waitFor(
    () => {
      const metrics = /metrics on (http:\S+)/.exec(gateway.stderr());
      const mounted = /console on (http:\S+)/.exec(gateway.stderr());
      expect(metrics && mounted).not.toBeNull();
      return [metrics?.[1] as string, (mounted?.[1] ?? '').replace(/\/$/, '')];
    },
    { timeout: 30_000, interval: 50 },
  );

  // Real traffic: a call and its replay, another call, a cancelled one (unknown), one awaiting approval.
  const first = await agent('console-agent');
  const k1 = await call(first, 'counter__count', { key: 'k1' });
  refs.k1 = refOf(k1);
  const replay = await call(first, 'counter__count', { key: 'k1' });
  expect(replay._meta?.['io.idem/replayed']).toBe(true);
  refs.k2 = refOf(await call(first, 'counter__count', { key: 'k2' }));

  const cancelling = await agent('cancelling-agent');
  const controller = new AbortController();
  const cancelled = call(
    cancelling,
    'counter__count',
    { key: 'u1', hold_file: 'hold-u1' },
    controller.signal,
  );
  await vi.waitFor(() => expect(executionsOf(counts, 'u1')).toBe(1), { timeout: 30_000, interval: 25 });
  controller.abort('the user changed their mind');
  await expect(cancelled).rejects.toThrow();
  refs.unknown = await vi.waitFor(
    async () => {
      const listed = await idem(['executions', 'list', '--db', db, '--state', 'unknown', '--json']);
      const [record] = JSON.parse(listed.stdout) as { id: string }[];
      expect(record).toBeDefined();
      return (record as { id: string }).id;
    },
    { timeout: 30_000, interval: 100 },
  );
  writeFileSync(join(counts, 'hold-u1'), '');

  const waiting = await agent('waiting-agent');
  const asked = await call(waiting, 'approver__count', { key: 'a1' });
  expect(idemCodeOf(asked)).toBe('IDEM_AWAITING_APPROVAL');
  refs.approval = refOf(asked);

  consoleUrl = await startConsoleProcess();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
}, 150_000);

afterAll(async () => {
  writeFileSync(join(counts, 'hold-u1'), '');
  await browser?.close().catch(() => {});
  for (const client of clients) await client.close().catch(() => {});
  consoleProcess?.kill('SIGTERM');
  await gateway?.kill();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('the operator console, in Chromium, over a store real gateway traffic wrote', () => {
  it('logs in with the token; lists the executions, unknown first, with counts per state', async () => {
    await page.goto(`${consoleUrl}/executions`);
    expect(page.url()).toBe(`${consoleUrl}/login`);
    await shot('login');
    await page.fill('#operator', 'alice');
    await page.fill('#token', 'not-the-token-but-long-enough');
    await page.click('#login button[type=submit]');
    await expect(page.locator('[role=alert]').textContent()).resolves.toContain('Wrong token');

    await page.fill('#operator', 'alice');
    await page.fill('#token', TOKEN);
    await page.click('#login button[type=submit]');
    await page.waitForURL(`${consoleUrl}/executions`);
    const cookie = (await context.cookies()).find((c) => c.name === 'idem_console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

    const rows = page.locator('#executions tbody tr');
    await expect(rows.first().getAttribute('data-ref')).resolves.toBe(refs.unknown);
    for (const ref of [refs.k1, refs.k2, refs.approval])
      await expect(page.locator(`#executions tr[data-ref="${ref}"]`).count()).resolves.toBe(1);
    await expect(page.locator('.counts a[data-state=unknown] strong').textContent()).resolves.toBe('1');
    await expect(page.locator('.counts a[data-state=completed] strong').textContent()).resolves.toBe('2');
    await shot('executions');
  }, 60_000);

  it("opens an execution's timeline", async () => {
    await page.click(`#executions a[href="/executions/${refs.k1}"]`);
    await page.waitForURL(`${consoleUrl}/executions/${refs.k1}`);
    const events = await page.locator('#timeline tbody td:nth-child(3)').allTextContents();
    expect(events).toEqual(
      expect.arrayContaining(['received', 'accepted', 'dispatched', 'outcome', 'attached']),
    );
    await expect(page.locator('#outcome').textContent()).resolves.toContain('k1=1');
    await shot('execution');
  }, 30_000);

  it('resolves the unknown execution; the CLI agrees, journaled with the operator', async () => {
    await page.goto(`${consoleUrl}/executions/${refs.unknown}`);
    await page.check('#resolve input[value=completed]');
    await page.fill('#resolve textarea[name=note]', 'the counter log shows it ran');
    await shot('resolve');
    await page.click('#resolve button[type=submit]');
    await expect(page.locator('[role=status]').textContent()).resolves.toContain('unknown → completed');
    const shown = await idem(['executions', 'show', refs.unknown as string, '--db', db, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    const { execution, timeline } = JSON.parse(shown.stdout) as {
      execution: { state: string; note: string };
      timeline: { kind: string; detail: Record<string, unknown> }[];
    };
    expect(execution).toMatchObject({ state: 'completed', note: 'the counter log shows it ran' });
    expect(timeline.find((e) => e.kind === 'operator_resolution')?.detail).toMatchObject({
      by: 'operator:alice',
      as: 'completed',
      note: 'the counter log shows it ran',
    });
    // The same rule as the CLI: a finished execution is not resolved again.
    await page.goto(`${consoleUrl}/executions/${refs.k1}`);
    await expect(page.locator('#resolve').count()).resolves.toBe(0);
  }, 30_000);

  it('approves the pending approval; the waiting agent gets its result, run once', async () => {
    await page.goto(`${consoleUrl}/approvals`);
    const row = page.locator(`#approvals tr[data-ref="${refs.approval}"]`);
    await expect(row.locator('.argbox').textContent()).resolves.toContain('a1');
    await shot('approvals');
    await row.locator('button[value=approved]').click();
    await page.locator('#confirm').waitFor();
    await expect(page.locator('#confirm-arguments').textContent()).resolves.toContain('"key": "a1"');
    await page.fill('#reason', 'looked fine');
    await shot('confirm');
    await page.click('#confirm button[value=approved]');
    await expect(page.locator('[role=status]').textContent()).resolves.toContain(
      'approved by operator:alice',
    );
    expect(executionsOf(counts, 'a1')).toBe(0);

    const waiting = clients[2] as Client;
    const result = await call(waiting, 'approver__count', { key: 'a1' });
    expect(idemCodeOf(result)).toBeUndefined();
    expect(result.structuredContent).toEqual({ key: 'a1', value: 1 });
    expect(refOf(result)).toBe(refs.approval);
    expect(executionsOf(counts, 'a1')).toBe(1);
    const shown = await idem(['approvals', 'show', refs.approval as string, '--db', db, '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      decision: 'approved',
      decidedBy: 'operator:alice',
      decidedVia: 'console',
      reason: 'looked fine',
    });
  }, 60_000);

  it('refreshes itself: a call made while the Executions page is open appears without a reload', async () => {
    await page.goto(`${consoleUrl}/executions`);
    const loads: string[] = [];
    page.on('load', () => loads.push(page.url()));
    const fresh = refOf(await call(clients[0] as Client, 'counter__count', { key: 'live-1' }));
    await page.locator(`#executions tr[data-ref="${fresh}"]`).waitFor({ timeout: 20_000 });
    expect(loads).toEqual([]);
  }, 40_000);

  it('shows sessions, the journal verified, and the activity chart', async () => {
    await page.goto(`${consoleUrl}/sessions`);
    await expect(page.locator('#sessions').textContent()).resolves.toContain('console-agent');
    await shot('sessions');
    await page.goto(`${consoleUrl}/journal`);
    await expect(page.locator('#verdict').getAttribute('class')).resolves.toBe('ok');
    await expect(
      page.locator('#streams tr[data-stream=activity] td:nth-child(2)').textContent(),
    ).resolves.toBe('verified');
    await shot('journal');
    await page.goto(`${consoleUrl}/activity`);
    await expect(page.locator('#activity-chart rect').count()).resolves.toBeGreaterThan(0);
    // Events as they happened: u1 went unknown (since resolved), a1 asked and was approved, k1 was repeated.
    const legend = (series: string) =>
      page.locator(`#activity-legend strong[data-series=${series}]`).textContent();
    await expect(legend('unknown')).resolves.toBe('1');
    await expect(legend('operator_resolution')).resolves.toBe('1');
    await expect(legend('awaiting_approval')).resolves.toBe('1');
    await expect(legend('authorized')).resolves.toBe('1');
    // k1, k2, u1, a1 (once approved) and live-1 were sent.
    await expect(legend('dispatched')).resolves.toBe('5');
    await expect(legend('attached')).resolves.toBe('2');
    await shot('activity');
  }, 30_000);

  it('refuses a request without the session, a wrong Origin, a missing CSRF token', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'idem_console');
    const withCookie = { cookie: `idem_console=${cookie?.value}` };
    const form = (body: Record<string, string>) => new URLSearchParams(body).toString();
    const post = (path: string, headers: Record<string, string>, body: string) =>
      fetch(`${consoleUrl}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });

    const anonymous = await fetch(`${consoleUrl}/approvals`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/login');
    expect((await post(`/approvals/${refs.approval}/decide`, {}, form({ decision: 'denied' }))).status).toBe(
      401,
    );

    const csrf = await page
      .goto(`${consoleUrl}/approvals`)
      .then(() => page.locator('header input[name=csrf]').getAttribute('value'));
    const foreign = await post(
      `/executions/${refs.k2}/resolve`,
      { ...withCookie, origin: 'http://evil.example' },
      form({ csrf: csrf as string, as: 'failed', note: 'x' }),
    );
    expect(foreign.status).toBe(403);
    // A DNS-rebound name (node:http: fetch will not send another Host).
    const rebound = await rawRequest(`${consoleUrl}/executions`, {
      method: 'GET',
      headers: { ...withCookie, host: 'evil.example' },
    });
    expect(rebound.status).toBe(403);
    const noCsrf = await post(
      `/executions/${refs.k2}/resolve`,
      withCookie,
      form({ as: 'failed', note: 'x' }),
    );
    expect(noCsrf.status).toBe(403);
    const shown = await idem(['executions', 'show', refs.k2 as string, '--db', db, '--json']);
    expect((JSON.parse(shown.stdout) as { execution: { state: string } }).execution.state).toBe('completed');
  }, 30_000);

  it("/metrics of the gateway, parsed, matches the store's counts", async () => {
    const text = await (await fetch(metricsUrl)).text();
    const families = parsePrometheus(text);
    const samples = (name: string) => families.find((f) => f.name === name)?.metrics ?? [];
    const sum = (name: string, labels: Record<string, string> = {}) =>
      samples(name)
        .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
        .reduce((total, m) => total + Number(m.value), 0);
    const listed = await idem(['executions', 'list', '--db', db, '--json']);
    const records = JSON.parse(listed.stdout) as { id: string; state: string }[];
    // One claim won per execution in the store; one executed answer per execution that ran for its caller.
    expect(sum('idem_claims_total', { result: 'won' })).toBe(records.length);
    expect(records.length).toBe(5);
    // k1, k2, live-1 and a1 once approved (u1 was answered unknown).
    expect(sum('idem_calls_total', { answer: 'executed' })).toBe(4);
    expect(sum('idem_calls_total', { answer: 'unknown' })).toBe(1);
    expect(sum('idem_calls_total', { answer: 'replayed' })).toBe(1);
    expect(sum('idem_calls_total', { answer: 'awaiting_approval' })).toBe(1);
    expect(sum('idem_unknown_outcomes_total')).toBe(1);
    expect(sum('idem_store_errors_total')).toBe(0);
    const latency = families.find((f) => f.name === 'idem_store_operation_seconds');
    expect(latency?.type).toBe('HISTOGRAM');
    // The parser keeps a histogram's buckets but not its labels: the claim series is read from the text.
    const claimsTimed = /^idem_store_operation_seconds_count\{operation="claim"\} (\d+)$/m.exec(text)?.[1];
    expect(Number(claimsTimed)).toBe(sum('idem_claims_total'));
    expect(families.find((f) => f.name === 'idem_receipts_in_use')?.type).toBe('GAUGE');

    // The console the gateway serves has the same registry, behind the operator token.
    expect((await fetch(`${gatewayConsoleUrl}/metrics`)).status).toBe(401);
    const viaConsole = await fetch(`${gatewayConsoleUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(viaConsole.status).toBe(200);
    const claimed = parsePrometheus(await viaConsole.text()).find((f) => f.name === 'idem_claims_total');
    expect(claimed?.metrics.find((m) => m.labels?.result === 'won')?.value).toBe(String(records.length));
    // `idem console` alone: its own store operations, behind the same token.
    const own = await fetch(`${consoleUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(own.status).toBe(200);
    expect(await own.text()).toMatch(/^idem_store_operation_seconds_count\{operation="list"\} [1-9]/m);
  }, 30_000);
});
