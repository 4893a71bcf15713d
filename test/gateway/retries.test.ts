/**
 * Retries through the gateway, counted on the far side: the counting upstream
 * (test/gateway/fixtures/counting-server.ts) appends one line per execution to
 * a file, across upstream processes (one per client session) and gateway
 * processes.
 *
 * - The official SDK client with a retrying fetch middleware (the SDK's own
 *   middleware API) that re-sends the same POST after losing the response —
 *   after the call finished, and while it is still running.
 * - A reconnect with a new session and a new request id: IDEM_IN_FLIGHT while
 *   the first runs, the stored result after it finished.
 * - Zero-config stdio mode, `idem gateway -- <command>`, spawned by the SDK's
 *   StdioClientTransport; and several such processes sharing one
 *   IDEM_DATA_DIR: a restarted agent's retry is recognised.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  applyMiddlewares,
  createMiddleware,
  type Middleware,
} from '@modelcontextprotocol/sdk/client/middleware.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { rpcOf } from '../../src/probe/losses.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

/** Re-sends the same request (same body, so the same JSON-RPC id) when the network fails, up to `attempts` times. */
function retrying(attempts: number, sent: { method?: string; id?: unknown }[]): Middleware {
  return createMiddleware(async (next, input, init) => {
    for (let attempt = 1; ; attempt++) {
      const rpc = rpcOf(init);
      if (rpc) sent.push({ method: rpc.method, id: rpc.id });
      try {
        return await next(input, init);
      } catch (error) {
        if (attempt >= attempts) throw error;
      }
    }
  });
}

/**
 * Below the retry layer, the network: the first `times` responses to a
 * tools/call are lost. With `whileRunning`, the connection drops while the
 * call is still running upstream (after `whileRunning()` resolves); otherwise
 * the whole response arrives and is thrown away.
 */
function losing(times: number, whileRunning?: () => Promise<void>): Middleware {
  let left = times;
  return createMiddleware(async (next, input, init) => {
    if (rpcOf(init)?.method !== 'tools/call' || left === 0) return next(input, init);
    left--;
    const abort = new AbortController();
    const response = await next(input, { ...init, signal: abort.signal });
    if (whileRunning) {
      await whileRunning();
      abort.abort();
    }
    await response.text().catch(() => {});
    throw new TypeError('fetch failed: connection reset');
  });
}

/** The SDK's applyMiddlewares puts the first middleware innermost (next to fetch): list the network first. */
async function httpClient(url: string, name: string, middleware?: Middleware): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), middleware ? { fetch: middleware(fetch) } : {}),
  );
  return client;
}

const countIn = (result: unknown) => (result as CallToolResult).structuredContent?.value;

describe('retries through idem gateway (HTTP), counted upstream', () => {
  let running: RunningGateway | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => {});
    await running?.close();
    running = undefined;
  });
  afterAll(() => removeTemporaries());

  async function start() {
    const counts = freshDir('counts');
    running = await startHttpGateway({ upstreams: { counter: countingUpstream(counts) } });
    return { counts, url: running.url, store: running.gateway.store };
  }

  it('a retrying fetch middleware re-sends the same POST after losing two responses: one execution, the real result', async () => {
    const { counts, url } = await start();
    const sent: { method?: string; id?: unknown }[] = [];
    const client = await httpClient(url, 'retrying-agent', applyMiddlewares(losing(2), retrying(3, sent)));
    clients.push(client);
    const result = await client.callTool({ name: 'count', arguments: { key: 'resent' } });
    expect(result.isError ?? false).toBe(false);
    expect(countIn(result)).toBe(1);
    // Three POSTs of the call, all with one id.
    const calls = sent.filter((s) => s.method === 'tools/call');
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.id)).size).toBe(1);
    expect(executionsOf(counts, 'resent')).toBe(1);
  });

  it('the connection drops while the call still runs; the resend waits for the one execution and gets its result', async () => {
    const { counts, url, store } = await start();
    const sent: { method?: string; id?: unknown }[] = [];
    const release = join(counts, 'release-running');
    const whileRunning = () =>
      vi.waitFor(() => expect(executionsOf(counts, 'running'), 'the first execution').toBe(1), PATIENTLY);
    const client = await httpClient(
      url,
      'retrying-agent',
      applyMiddlewares(losing(1, whileRunning), retrying(3, sent)),
    );
    clients.push(client);
    const call = client.callTool({
      name: 'count',
      arguments: { key: 'running', hold_file: 'release-running' },
    });
    // Let the resend reach the gateway while the first is held upstream (its receipt answers it), then let it finish.
    await vi.waitFor(
      () => expect(sent.filter((s) => s.method === 'tools/call').length, 'the resend').toBe(2),
      PATIENTLY,
    );
    await vi.waitFor(
      async () =>
        expect(
          (await store.readJournal()).some((e) => e.kind === 'receipt_hit'),
          'the resend answered from the receipt',
        ).toBe(true),
      PATIENTLY,
    );
    expect(executionsOf(counts, 'running')).toBe(1);
    writeFileSync(release, '');
    const result = await call;
    expect(result.isError ?? false).toBe(false);
    expect(countIn(result)).toBe(1);
    expect(executionsOf(counts, 'running')).toBe(1);
  });

  it('a reconnect with a new session and a new request id: IDEM_IN_FLIGHT while the first runs, the stored result after, never a second execution', async () => {
    const { counts, url } = await start();
    const args = { key: 'reconnect', hold_file: 'release-reconnect' };
    const first = await httpClient(url, 'agent-r');
    clients.push(first);
    const running1 = first.callTool({ name: 'count', arguments: args });
    await vi.waitFor(
      () => expect(executionsOf(counts, 'reconnect'), 'the first execution').toBe(1),
      PATIENTLY,
    );

    // The agent lost its connection and comes back: new session, new request id, same intent.
    const second = await httpClient(url, 'agent-r');
    clients.push(second);
    const inFlight = await second.callTool({ name: 'count', arguments: args });
    expect(inFlight.isError).toBe(true);
    expect(idemOf(inFlight)).toMatchObject({ code: 'IDEM_IN_FLIGHT', state: 'dispatched' });
    const ref = idemOf(inFlight)?.ref as string;
    expect(ref).toMatch(/^exe_/);
    expect(
      idemOf(await second.callTool({ name: 'idem_execution_status', arguments: { ref } })),
    ).toMatchObject({
      code: 'IDEM_IN_FLIGHT',
    });

    writeFileSync(join(counts, 'release-reconnect'), '');
    const done = await running1;
    expect(countIn(done)).toBe(1);
    expect(done._meta?.['io.idem/execution-id']).toBe(ref);

    const again = await second.callTool({ name: 'count', arguments: args });
    expect(again.isError ?? false).toBe(false);
    expect(countIn(again)).toBe(1);
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(again._meta?.['io.idem/execution-id']).toBe(ref);
    const status = await second.callTool({ name: 'idem_execution_status', arguments: { ref } });
    expect(countIn(status)).toBe(1);
    expect(executionsOf(counts, 'reconnect')).toBe(1);

    // A client of another name is another actor: its call is its own intent.
    const other = await httpClient(url, 'agent-other');
    clients.push(other);
    expect(countIn(await other.callTool({ name: 'count', arguments: { key: 'reconnect' } }))).toBe(2);
  });
});

describe('zero-config stdio mode: idem gateway -- <command>', () => {
  const clients: Client[] = [];
  afterEach(async () => {
    // Closing the client ends the gateway's stdin: the gateway and its upstream exit.
    for (const client of clients.splice(0)) await client.close().catch(() => {});
  });
  afterAll(() => removeTemporaries());

  async function stdioGateway(dataDir: string, counts: string, name: string): Promise<Client> {
    const upstream = countingUpstream(counts);
    const cli = idemCommand(['gateway', '--', upstream.command, ...upstream.args]);
    const transport = new StdioClientTransport({
      command: cli.command,
      args: cli.args,
      cwd: cli.cwd,
      env: { IDEM_DATA_DIR: dataDir },
      stderr: 'ignore',
    });
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  it('wraps one stdio server: its tools, the status tool, and one execution per intent', async () => {
    const dataDir = freshDir('stdio-data');
    const counts = freshDir('counts');
    const client = await stdioGateway(dataDir, counts, 'stdio-agent');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['count', 'idem_execution_status', 'read_count']);
    expect(tools.find((t) => t.name === 'count')?.annotations).toMatchObject({ idempotentHint: false });

    const first = await client.callTool({ name: 'count', arguments: { key: 'zero-config' } });
    expect(countIn(first)).toBe(1);
    // The agent repeats itself (a new request id): the same intent, answered from the store.
    const repeat = await client.callTool({ name: 'count', arguments: { key: 'zero-config' } });
    expect(countIn(repeat)).toBe(1);
    expect(repeat._meta?.['io.idem/replayed']).toBe(true);
    // Read-only tools pass straight through.
    expect(countIn(await client.callTool({ name: 'read_count', arguments: { key: 'zero-config' } }))).toBe(1);
    expect(executionsOf(counts, 'zero-config')).toBe(1);
  });

  it('gateway processes sharing one IDEM_DATA_DIR share one store: in flight across processes, and a restarted agent gets the stored result', async () => {
    const dataDir = freshDir('stdio-shared');
    const counts = freshDir('counts');
    const args = { key: 'shared', hold_file: 'release-shared' };
    const [a, b] = await Promise.all([
      stdioGateway(dataDir, counts, 'agent-7'),
      stdioGateway(dataDir, counts, 'agent-7'),
    ]);

    const running1 = a.callTool({ name: 'count', arguments: args });
    await vi.waitFor(
      () => expect(executionsOf(counts, 'shared'), 'the execution through process A').toBe(1),
      PATIENTLY,
    );
    const inFlight = await b.callTool({ name: 'count', arguments: args });
    expect(idemOf(inFlight)).toMatchObject({ code: 'IDEM_IN_FLIGHT' });

    writeFileSync(join(counts, 'release-shared'), '');
    const done = await running1;
    expect(countIn(done)).toBe(1);
    const stored = await b.callTool({ name: 'count', arguments: args });
    expect(countIn(stored)).toBe(1);
    expect(stored._meta?.['io.idem/replayed']).toBe(true);

    // The agent restarts: both processes go, a new one starts on the same data directory.
    await Promise.all([a.close(), b.close()]);
    const restarted = await stdioGateway(dataDir, counts, 'agent-7');
    const retry = await restarted.callTool({ name: 'count', arguments: args });
    expect(retry.isError ?? false).toBe(false);
    expect(countIn(retry)).toBe(1);
    expect(retry._meta?.['io.idem/replayed']).toBe(true);
    expect(retry._meta?.['io.idem/execution-id']).toBe(done._meta?.['io.idem/execution-id']);
    expect(executionsOf(counts, 'shared')).toBe(1);
  });
});
