/**
 * Sessions that clients never end (issue 26, item 6): caps per actor and in
 * all, an idle timeout that fits, and no session closed while something of it
 * is under way. Real SDK clients over loopback HTTP; the upstream processes
 * are counted on the far side (each start of the counting server writes its
 * pid; a live pid is a running upstream).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import type { GatewayConfig } from '../../src/gateway/config/index.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { MCP_HEADERS, rawRequest, rawSession } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf, readStarts } from './fixtures/counting-server.js';

let running: RunningGateway | undefined;
let counts = '';
afterEach(async () => {
  if (counts) for (const hold of ['hold-a', 'hold-b', 'hold-t']) writeFileSync(join(counts, hold), '');
  await running?.close();
  running = undefined;
  removeTemporaries();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const liveUpstreams = () => readStarts(counts).filter(alive);

/** The gateway's clock: the tests move it, so no step waits for real time to pass. */
let now = 1_000_000;

async function start(http: Record<string, unknown>, tools?: GatewayConfig['tools']) {
  counts = freshDir('session-bounds');
  mkdirSync(counts, { recursive: true });
  running = await startHttpGateway(
    {
      // The tests count each session's upstream process: none is started ahead beside them
      // (upstream-spares.test.ts covers those).
      upstreams: { counter: { ...countingUpstream(counts), spare: false } },
      ...(tools ? { tools } : {}),
      // Long, so the front's own timer never sweeps first: the tests sweep when they choose.
      http: { session_idle_timeout: '1h', session_unused_timeout: '30m', ...http },
    },
    { clock: () => now },
  );
  return running;
}

/** An SDK client of `name` (its actor, without auth) that has listed the tools. */
async function connect(url: string, name: string) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name, version: '1' });
  await client.connect(transport);
  await client.listTools();
  return { client, transport, sessionId: transport.sessionId as string };
}

/**
 * What LangChain and mcp-remote do: the client goes away without DELETE. The SDK transport's
 * close() aborts its streams and sends nothing; the session stays open on the gateway.
 */
async function abandon(session: { transport: StreamableHTTPClientTransport }) {
  await session.transport.close();
}

/** A raw initialize: its HTTP status and JSON-RPC reply. */
async function initialize(url: string, name: string) {
  const response = await rawRequest(url, {
    headers: MCP_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '1' } },
    }),
  });
  return { status: response.status, sessionId: response.headers['mcp-session-id'], text: response.text };
}

const pingStatus = async (url: string, sessionId: string) =>
  (
    await rawRequest(url, {
      headers: { ...MCP_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }),
    })
  ).status;

describe('the per-actor cap', () => {
  it("closes the actor's least recently used abandoned session (and its upstream) for a new one; another actor's stays", async () => {
    const { url } = await start({ max_sessions_per_actor: 2 });
    const other = await connect(url, 'other-agent');
    const first = await connect(url, 'langchain-run');
    await abandon(first);
    const second = await connect(url, 'langchain-run');
    await abandon(second);
    expect(liveUpstreams()).toHaveLength(3);
    // Its streams close on the gateway's side a moment after the client left: until then it is in use.
    const third = await vi.waitFor(() => connect(url, 'langchain-run'), { timeout: 20_000, interval: 50 });
    await vi.waitFor(() => expect(liveUpstreams()).toHaveLength(3), { timeout: 20_000, interval: 50 });
    expect(await pingStatus(url, first.sessionId)).toBe(404);
    expect(await pingStatus(url, second.sessionId)).toBe(200);
    // The other actor's session was not touched, and both live clients still work.
    expect((await other.client.listTools()).tools.length).toBeGreaterThan(0);
    expect((await third.client.listTools()).tools.length).toBeGreaterThan(0);
    await other.client.close();
    await third.client.close();
  }, 60_000);

  it('refuses a new session with 429 IDEM_SESSIONS_FULL when every session of the actor is in use, and the call in flight is not lost', async () => {
    const { url } = await start({ max_sessions_per_actor: 1 });
    const busy = await connect(url, 'agent');
    const call = busy.client.callTool({ name: 'count', arguments: { key: 'a', hold_file: 'hold-a' } });
    await vi.waitFor(() => expect(executionsOf(counts, 'a')).toBe(1), { timeout: 20_000, interval: 25 });
    const refused = await initialize(url, 'agent');
    expect(refused.status).toBe(429);
    const error = JSON.parse(refused.text).error;
    expect(error.data).toEqual({ code: 'IDEM_SESSIONS_FULL', limit: 'actor', max: 1 });
    expect(error.message).toMatch(/End the sessions you no longer use/);
    expect(JSON.parse(refused.text).id).toBe('init');
    expect(readStarts(counts)).toHaveLength(1);
    writeFileSync(join(counts, 'hold-a'), '');
    const result = (await call) as CallToolResult;
    expect(result.structuredContent).toMatchObject({ key: 'a', value: 1 });
    await busy.client.close();
  }, 60_000);
});

describe('the overall cap', () => {
  it("closes the least recently used session with nothing in progress, whoever's it is; refuses with 503 when every one is in use", async () => {
    const { url } = await start({ max_sessions: 2 });
    const quiet = await rawSession(url, 'quiet-agent');
    const busy = await connect(url, 'busy-agent');
    const call = busy.client.callTool({ name: 'count', arguments: { key: 'a', hold_file: 'hold-a' } });
    await vi.waitFor(() => expect(executionsOf(counts, 'a')).toBe(1), { timeout: 20_000, interval: 25 });
    const fresh = await connect(url, 'new-agent');
    expect(await pingStatus(url, quiet.sessionId)).toBe(404);
    const second = fresh.client.callTool({ name: 'count', arguments: { key: 'b', hold_file: 'hold-b' } });
    await vi.waitFor(() => expect(executionsOf(counts, 'b')).toBe(1), { timeout: 20_000, interval: 25 });
    const refused = await initialize(url, 'third-agent');
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text).error.data).toEqual({ code: 'IDEM_SESSIONS_FULL', limit: 'all', max: 2 });
    expect(readStarts(counts)).toHaveLength(3);
    writeFileSync(join(counts, 'hold-a'), '');
    writeFileSync(join(counts, 'hold-b'), '');
    expect(((await call) as CallToolResult).structuredContent).toMatchObject({ key: 'a', value: 1 });
    expect(((await second) as CallToolResult).structuredContent).toMatchObject({ key: 'b', value: 1 });
    await busy.client.close();
    await fresh.client.close();
  }, 60_000);
});

describe('idle sessions', () => {
  it('one that never got past initialize is closed after session_unused_timeout; one in use only after session_idle_timeout', async () => {
    const { url, served } = await start({ session_idle_timeout: '10m', session_unused_timeout: '1m' });
    const unused = await initialize(url, 'probe');
    const used = await rawSession(url, 'agent');
    await used.call({ id: 1, method: 'tools/list' });
    expect(liveUpstreams()).toHaveLength(2);
    now += 60_000;
    // Waits out the moment the server has not yet seen the last response close (busy until then).
    await vi.waitFor(() => expect(served.closeIdleSessions()).toBe(1), PATIENTLY);
    expect(await pingStatus(url, unused.sessionId as string)).toBe(404);
    expect(await pingStatus(url, used.sessionId)).toBe(200);
    now += 10 * 60_000;
    await vi.waitFor(() => expect(served.closeIdleSessions()).toBe(1), PATIENTLY);
    await vi.waitFor(() => expect(liveUpstreams()).toHaveLength(0), { timeout: 20_000, interval: 50 });
  }, 60_000);

  it('is not closed while a call it started still runs on the upstream, though its caller was answered (timeout)', async () => {
    const { url, served, gateway } = await start(
      { session_idle_timeout: '10m' },
      { count: { replay: 'review', timeout: '1s' } },
    );
    const session = await rawSession(url, 'agent');
    const answer = await session.call({
      id: 't',
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 't', hold_file: 'hold-t' } },
    });
    // Answered at the contract's timeout while the upstream still works on it.
    expect(idemCodeOf((answer as { result: CallToolResult }).result)).toMatch(
      /^IDEM_(OUTCOME_UNKNOWN|REVIEW_REQUIRED)$/,
    );
    now += 60 * 60_000;
    await vi.waitFor(() => expect(served.closeIdleSessions()).toBe(0), PATIENTLY);
    expect(liveUpstreams()).toHaveLength(1);
    writeFileSync(join(counts, 'hold-t'), '');
    // Its real outcome arrives through the session's upstream connection, which is still there.
    await vi.waitFor(
      async () => expect((await gateway.store.list({ tool: 'count' }))[0]?.state).toBe('completed'),
      { timeout: 20_000, interval: 25 },
    );
    // Its idle time starts when that work ended (the last sweep that saw it), not at its last request.
    expect(served.closeIdleSessions()).toBe(0);
    now += 10 * 60_000;
    expect(served.closeIdleSessions()).toBe(1);
  }, 60_000);
});
