/**
 * Bad input at the gateway's fronts — Streamable HTTP and stdio: each kind
 * gets the protocol's error, nothing reaches the upstream that should not,
 * and the gateway keeps serving. Then a bounded fuzz run (fast-check, fixed
 * seed) against a gateway process serving both fronts at once; afterwards the
 * process is alive, its memory sane, a normal call works, and the counting
 * upstream shows executions only for valid calls.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/front/request-body.js';
import { ProxySession } from '../../src/gateway/sessions/session.js';
import { stopProcess } from '../conformance/harness.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { isAlive, type RunningGateway, rssOf, startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { MCP_HEADERS, messagesOf, type RawResponse, rawRequest, rawSession } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { readExecutions } from './fixtures/counting-server.js';
import { classify, type FuzzSample, fuzzSample } from './fuzz-messages.js';

type Session = Awaited<ReturnType<typeof rawSession>>;

/**
 * The counting upstream's executions since the current test began. A describe
 * shares one gateway (a process per test would be slow), so each test checks
 * only what it caused itself: no test depends on another having run.
 */
function executionsPerTest(counts: () => string) {
  let mark = 0;
  beforeEach(() => {
    mark = readExecutions(counts()).length;
  });
  return () =>
    readExecutions(counts())
      .slice(mark)
      .map((e) => e.key);
}

const nested = (depth: number, arrays: boolean) =>
  arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

const deepCall = (id: number, tool: string, key: string, depth: number, arrays = true) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":{"key":"${key}","payload":"p","extra":${nested(depth, arrays)}}}}`;

function errorOf(response: RawResponse): { code: number; message: string } | undefined {
  return (messagesOf(response)[0] as { error?: { code: number; message: string } } | undefined)?.error;
}

describe('bad input at the HTTP front: the spec’s error, and the gateway stays up', () => {
  let running: RunningGateway;
  let counts: string;
  let session: Session;
  let normal = 0;
  const executedInThisTest = executionsPerTest(() => counts);

  beforeAll(async () => {
    counts = freshDir('counts');
    running = await startHttpGateway({ upstreams: { counter: countingUpstream(counts) } });
    session = await rawSession(running.url, 'bad-input-http');
  });
  afterAll(async () => {
    await running?.close();
    removeTemporaries();
  });

  /**
   * A normal call after each bad input: still served, executed once; and the
   * only executions this test caused are `expected` and that normal call.
   */
  async function stillServing(expected: string[] = []) {
    const key = `ok-${++normal}`;
    const reply = await session.call({
      id: `normal-${normal}`,
      method: 'tools/call',
      params: { name: 'count', arguments: { key } },
    });
    expect(reply.result).toMatchObject({ structuredContent: { key, value: 1 } });
    expect(executedInThisTest()).toEqual([...expected, key]);
  }

  const post = (body: string, headers: Record<string, string> = {}) =>
    rawRequest(running.url, { headers: { ...session.headers, ...headers }, body });

  it.each(
    (
      [
        ['malformed JSON', '{"jsonrpc":"2.0","id":1,"method":', 400, null],
        ['not JSON at all', 'hello', 400, null],
        ['missing jsonrpc', JSON.stringify({ id: 1, method: 'ping' }), 400, 1],
        ['jsonrpc "1.0"', JSON.stringify({ jsonrpc: '1.0', id: 2, method: 'ping' }), 400, 2],
        [
          'id of wrong type: an object',
          JSON.stringify({ jsonrpc: '2.0', id: { n: 1 }, method: 'ping' }),
          400,
          null,
        ],
        ['id of wrong type: a float', JSON.stringify({ jsonrpc: '2.0', id: 1.5, method: 'ping' }), 400, null],
        [
          'id of wrong type: a boolean',
          JSON.stringify({ jsonrpc: '2.0', id: true, method: 'ping' }),
          400,
          null,
        ],
        ['method not a string', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 42 }), 400, 3],
        [
          'params not an object (array)',
          JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: [1] }),
          400,
          4,
        ],
        [
          'params not an object (string), on tools/call',
          JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: 'count' }),
          400,
          5,
        ],
        ['null', 'null', 400, null],
        ['a bare number', '42', 400, null],
        ['an empty batch', '[]', 400, null],
        [
          'a batch with one bad member',
          JSON.stringify([{ jsonrpc: '2.0', id: 6, method: 'ping' }, { id: 7 }]),
          400,
          7,
        ],
      ] as [string, string, number, number | null][]
    ).map(([name, body, status, id]) => ({ name, body, status, id })),
  )('$name → HTTP $status with the JSON-RPC error', async ({ body, status, id }) => {
    const response = await post(body);
    expect(response.status).toBe(status);
    const error = errorOf(response);
    // Not JSON: Parse error. JSON but not a JSON-RPC message: Invalid Request.
    expect(error?.code).toBe(classify(body).json ? -32600 : -32700);
    expect((messagesOf(response)[0] as { id?: unknown }).id).toBe(id);
    await stillServing();
  });

  it('unknown method → -32601, with the request id', async () => {
    const reply = await session.call({ id: 'm1', method: 'no/such/method', params: {} });
    expect(reply.error).toMatchObject({ code: -32601 });
    await stillServing();
  });

  it('unknown tool → -32602, nothing executed', async () => {
    const reply = await session.call({
      id: 'u1',
      method: 'tools/call',
      params: { name: 'no_such_tool', arguments: {} },
    });
    expect(reply.error).toMatchObject({ code: -32602, message: expect.stringContaining('no_such_tool') });
    await stillServing();
  });

  it('arguments that do not match the tool’s schema → IDEM_INVALID_INPUT, nothing executed', async () => {
    const reply = await session.call({
      id: 's1',
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 7 } },
    });
    expect(idemOf(reply.result)).toMatchObject({ code: 'IDEM_INVALID_INPUT' });
    await stillServing();
  });

  it.each([
    ['with Content-Length', false],
    ['streamed (chunked, no Content-Length)', true],
  ])(`a body over ${MAX_BODY_BYTES} bytes, %s → 413`, async (_label, chunked) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'big',
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 'oversize', payload: 'x'.repeat(MAX_BODY_BYTES) } },
    });
    const response = chunked ? await chunkedPost(running.url, session.headers, body) : await post(body);
    expect(response.status).toBe(413);
    expect(errorOf(response)).toMatchObject({ code: -32600 });
    await stillServing();
  });

  it.each([
    ['arrays', true],
    ['objects', false],
  ])(
    'arguments nested 10 000 levels deep (%s): a clear error, no crash, nothing executed',
    async (_label, arrays) => {
      const effect = messagesOf(await post(deepCall(901, 'count', 'deep', 10_000, arrays)));
      expect(effect[effect.length - 1]).toMatchObject({ id: 901 });
      const result = (effect[effect.length - 1] as { result?: unknown }).result;
      expect(idemOf(result)).toMatchObject({ code: 'IDEM_INVALID_INPUT' });
      expect(textOf(result)).toMatch(/nested too deeply/);
      // A read-only tool is passed straight through; a message that deep cannot be sent on.
      const readOnly = messagesOf(await post(deepCall(902, 'read_count', 'deep', 10_000, arrays)));
      expect(readOnly[readOnly.length - 1]).toMatchObject({ id: 902, error: { code: -32603 } });
      // Deep, but within what can be copied: Idem's own limit (64 levels) answers.
      const moderate = messagesOf(await post(deepCall(903, 'count', 'deep', 1_000, arrays)));
      expect(textOf((moderate[moderate.length - 1] as { result?: unknown }).result)).toMatch(
        /deeper than 64/,
      );
      await stillServing();
    },
  );

  it('huge but valid arguments (up to the 4 MiB body limit, which is also the identity limit): executed once; passed through for a read-only tool', async () => {
    const call = (id: string, tool: string, key: string, size: number) =>
      session.call({
        id,
        method: 'tools/call',
        params: { name: tool, arguments: { key, payload: 'y'.repeat(size) } },
      });
    const under = await call('h1', 'count', 'huge-under', 600 * 1024);
    expect(under.result).toMatchObject({ structuredContent: { key: 'huge-under', value: 1 } });
    const big = await call('h2', 'count', 'huge-big', 3 * 1024 * 1024);
    expect(big.result).toMatchObject({ structuredContent: { key: 'huge-big', value: 1 } });
    const again = await call('h2b', 'count', 'huge-big', 3 * 1024 * 1024);
    expect(again.result).toMatchObject({ structuredContent: { key: 'huge-big', value: 1 } });
    const read = await call('h3', 'read_count', 'huge-big', 3 * 1024 * 1024);
    expect(read.result).toMatchObject({ structuredContent: { value: 1, payload: 3 * 1024 * 1024 } });
    // The repeat of huge-big was a replay: one execution each.
    await stillServing(['huge-under', 'huge-big']);
  });

  it('an unknown session id → 404', async () => {
    const response = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), {
      'mcp-session-id': 'no-such-session',
    });
    expect(response.status).toBe(404);
    expect(errorOf(response)).toMatchObject({ code: -32001 });
    await stillServing();
  });

  it('requests without a session that are not an initialize → 400, and they leave no gateway session behind', async () => {
    // Counts live gateway sessions by watching ProxySession start and close (instrumentation, not a mock).
    const live = new Set<ProxySession>();
    const { start, close } = ProxySession.prototype;
    ProxySession.prototype.start = function (this: ProxySession) {
      live.add(this);
      return start.call(this);
    };
    ProxySession.prototype.close = function (this: ProxySession) {
      live.delete(this);
      return close.call(this);
    };
    try {
      const { 'mcp-session-id': _drop, ...headers } = session.headers;
      for (let i = 0; i < 20; i++) {
        const post = await rawRequest(running.url, {
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' }),
        });
        expect(post.status).toBe(400);
        const get = await rawRequest(running.url, { method: 'GET', headers });
        expect(get.status).toBe(400);
      }
      await vi.waitFor(() => expect(live.size, 'the sessions opened for them to close').toBe(0), {
        ...PATIENTLY,
        timeout: 10_000,
      });
    } finally {
      ProxySession.prototype.start = start;
      ProxySession.prototype.close = close;
    }
    await stillServing();
  });

  it('a foreign Host header → 403 (DNS rebinding), a foreign Origin → 403', async () => {
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const host = await post(ping, { host: 'attacker.example:80' });
    expect(host.status).toBe(403);
    expect(errorOf(host)?.message).toMatch(/Host/);
    const origin = await post(ping, { origin: 'http://attacker.example' });
    expect(origin.status).toBe(403);
    expect(errorOf(origin)?.message).toMatch(/Origin/);
    // The gateway's own origin is fine.
    const own = await post(ping, { origin: new URL(running.url).origin });
    expect(own.status).toBe(200);
    await stillServing();
  });

  it('wrong Accept → 406, wrong Content-Type → 415, PUT → 405', async () => {
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await post(ping, { accept: 'application/json' })).status).toBe(406);
    expect((await post(ping, { 'content-type': 'text/plain' })).status).toBe(415);
    expect(
      (await rawRequest(running.url, { method: 'PUT', headers: session.headers, body: ping })).status,
    ).toBe(405);
    await stillServing();
  });
});

describe('bearer auth at the HTTP front', () => {
  const token = 's3cret-token-for-tests';
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startHttpGateway({
      upstreams: { counter: countingUpstream(freshDir('counts')) },
      auth: { bearer: [{ token_sha256: createHash('sha256').update(token).digest('hex'), actor: 'ci-bot' }] },
    });
  });
  afterAll(async () => {
    await running?.close();
    removeTemporaries();
  });

  it.each<[string, Record<string, string>]>([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-token' }],
    ['another scheme', { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('%s → 401 with WWW-Authenticate', async (_label, headers) => {
    const response = await rawRequest(running.url, {
      headers: { ...MCP_HEADERS, ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(errorOf(response)).toMatchObject({ code: -32001 });
  });

  it('the right token works, and is needed on every request of the session', async () => {
    const authorized = await rawSession(running.url, 'auth-agent', { authorization: `Bearer ${token}` });
    const reply = await authorized.call({
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 'auth' } },
    });
    expect(reply.result).toMatchObject({ structuredContent: { value: 1 } });
    const { authorization: _drop, ...withoutToken } = authorized.headers;
    const response = await rawRequest(running.url, {
      headers: withoutToken,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
    });
    expect(response.status).toBe(401);
  });
});

/** A raw JSON-RPC peer on a gateway's stdio: lines out, parsed lines in. */
class StdioPeer {
  readonly messages: Record<string, unknown>[] = [];
  readonly nonJson: string[] = [];
  #buffer = '';
  constructor(readonly child: ChildProcess) {
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      this.#buffer += chunk;
      let newline = this.#buffer.indexOf('\n');
      while (newline >= 0) {
        const line = this.#buffer.slice(0, newline);
        this.#buffer = this.#buffer.slice(newline + 1);
        if (line.trim()) {
          try {
            this.messages.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            this.nonJson.push(line);
          }
        }
        newline = this.#buffer.indexOf('\n');
      }
    });
  }

  async send(line: string): Promise<void> {
    const stdin = this.child.stdin;
    if (!stdin) throw new Error('no stdin');
    if (!stdin.write(`${line}\n`)) await new Promise<void>((resolve) => stdin.once('drain', () => resolve()));
  }

  async reply(id: string | number, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    await vi.waitFor(
      () =>
        expect(
          this.messages.some((m) => m.id === id),
          `the answer to ${JSON.stringify(id)}`,
        ).toBe(true),
      { ...PATIENTLY, timeout: timeoutMs },
    );
    return this.messages.find((m) => m.id === id) as Record<string, unknown>;
  }

  async request(id: string | number, method: string, params?: unknown): Promise<Record<string, unknown>> {
    await this.send(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) }));
    return this.reply(id);
  }

  async initialize(clientName: string): Promise<void> {
    const init = await this.request('init', 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: clientName, version: '1' },
    });
    if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
    await this.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  }
}

function spawnCli(args: string[], dataDir: string): ChildProcess {
  const cli = idemCommand(['gateway', ...args]);
  const child = spawn(cli.command, cli.args, {
    cwd: cli.cwd,
    env: { ...process.env, IDEM_DATA_DIR: dataDir },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stderr?.resume();
  return child;
}

describe('bad input over stdio (idem gateway -- <command>)', () => {
  let child: ChildProcess;
  let peer: StdioPeer;
  let counts: string;
  const executedInThisTest = executionsPerTest(() => counts);
  beforeAll(async () => {
    counts = freshDir('counts');
    const upstream = countingUpstream(counts);
    child = spawnCli(['--', upstream.command, ...upstream.args], freshDir('stdio-data'));
    peer = new StdioPeer(child);
    await peer.initialize('bad-input-stdio');
  });
  afterAll(async () => {
    child?.stdin?.end();
    if (child) await stopProcess(child);
    removeTemporaries();
  });

  let normal = 0;
  /** As over HTTP: still served, and this test executed nothing but its normal call. */
  async function stillServing() {
    expect(isAlive(child)).toBe(true);
    const key = `ok-${++normal}`;
    const reply = await peer.request(`normal-${normal}`, 'tools/call', { name: 'count', arguments: { key } });
    expect(reply.result).toMatchObject({ structuredContent: { key, value: 1 } });
    expect(executedInThisTest()).toEqual([key]);
  }

  it('lines that are not JSON-RPC messages get -32700 / -32600 with id null, and change nothing', async () => {
    const before = peer.messages.length;
    for (const line of [
      '{"jsonrpc":"2.0","id":1,"method":',
      'hello',
      JSON.stringify({ id: 'x1', method: 'ping' }),
      JSON.stringify({ jsonrpc: '2.0', id: { n: 1 }, method: 'ping' }),
      JSON.stringify({ jsonrpc: '2.0', id: 1.5, method: 'ping' }),
      JSON.stringify({ jsonrpc: '2.0', id: 'x2', method: 42 }),
      JSON.stringify({ jsonrpc: '2.0', id: 'x3', method: 'tools/call', params: 'count' }),
      '[]',
      JSON.stringify([{ jsonrpc: '2.0', id: 'x4', method: 'ping' }]),
      'null',
    ])
      await peer.send(line);
    await stillServing();
    const answers = peer.messages.slice(before);
    const errors = answers.filter((m) => m.id === null).map((m) => (m.error as { code: number }).code);
    expect(errors).toEqual([-32700, -32700, -32600, -32600, -32600, -32600, -32600, -32600, -32600, -32600]);
    expect(answers.filter((m) => m.id !== null).map((m) => m.id)).toEqual([`normal-${normal}`]);
    expect(peer.nonJson).toEqual([]);
  });

  it('unknown method → -32601; unknown tool → -32602; a second initialize → -32600', async () => {
    expect((await peer.request('m1', 'no/such/method', {})).error).toMatchObject({ code: -32601 });
    expect(
      (await peer.request('t1', 'tools/call', { name: 'no_such_tool', arguments: {} })).error,
    ).toMatchObject({
      code: -32602,
    });
    const again = await peer.request('i2', 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'someone-else', version: '1' },
    });
    expect(again.error).toMatchObject({ code: -32600 });
    // Still one upstream process under the gateway.
    await stillServing();
    const executions = readExecutions(counts);
    expect(executions.length).toBeGreaterThan(0);
    expect(new Set(executions.map((e) => e.pid)).size).toBe(1);
  });

  it('arguments nested 10 000 levels deep: IDEM_INVALID_INPUT, no crash', async () => {
    await peer.send(deepCall(77, 'count', 'deep', 10_000));
    const reply = await peer.reply(77);
    expect(idemOf(reply.result)).toMatchObject({ code: 'IDEM_INVALID_INPUT' });
    await stillServing();
  });

  it('huge but valid arguments: refused above the 4 MiB identity limit (stdio has no body limit), passed through for a read-only tool', async () => {
    const payload = 'z'.repeat(5 * 1024 * 1024);
    const over = await peer.request('big1', 'tools/call', {
      name: 'count',
      arguments: { key: 'huge', payload },
    });
    expect(idemOf(over.result)).toMatchObject({ code: 'IDEM_INVALID_INPUT' });
    const read = await peer.request('big2', 'tools/call', {
      name: 'read_count',
      arguments: { key: 'huge', payload },
    });
    expect(read.result).toMatchObject({ structuredContent: { value: 0, payload: payload.length } });
    await stillServing();
  });
});

describe('bounded fuzz: random and mutated JSON-RPC at both fronts of one gateway process', () => {
  const SEED = 20_240_611;
  const HTTP_RUNS = 2_500;
  const STDIO_RUNS = 2_500;
  const BUDGET_MS = 25_000;
  let child: ChildProcess;
  let peer: StdioPeer;
  let url: string;
  let counts: string;

  beforeAll(async () => {
    counts = freshDir('counts');
    const upstream = countingUpstream(counts);
    const cli = idemCommand([
      'gateway',
      '--listen',
      '127.0.0.1:0',
      '--stdio',
      '--',
      upstream.command,
      ...upstream.args,
    ]);
    child = spawn(cli.command, cli.args, {
      cwd: cli.cwd,
      env: { ...process.env, IDEM_DATA_DIR: freshDir('fuzz-data') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // The URL is printed on stderr; stdout is the stdio front.
    url = await waitForUrlOnStderr(child);
    peer = new StdioPeer(child);
    await peer.initialize('fuzz-stdio');
  }, 60_000);
  afterAll(async () => {
    child?.stdin?.end();
    if (child) await stopProcess(child);
    removeTemporaries();
  });

  it(`${HTTP_RUNS} HTTP and ${STDIO_RUNS} stdio messages (seed ${SEED}, time-bounded): every answer is the protocol's, the process survives, only valid calls execute`, async () => {
    const session = await rawSession(url, 'fuzz-http');
    const rssBefore = await rssOf(child.pid as number);
    const allowedKeys = new Set<string>();
    const problems: string[] = [];

    // HTTP: one request at a time, each answer checked against the SDK's own reading of the message.
    const httpSamples = fc.sample(fuzzSample, { seed: SEED, numRuns: HTTP_RUNS });
    const httpStarted = Date.now();
    let httpSent = 0;
    for (const sample of httpSamples) {
      if (Date.now() - httpStarted > BUDGET_MS) break;
      const c = classify(sample.body);
      // A batch that cancels its own request gets no answer for it, and its stream stays open (MCP: no
      // response to a cancelled request): nothing to check there, so such a batch is not sent.
      if (c.cancels.some((id) => c.requestIds.includes(id))) continue;
      // A sessionless initialize opens a real session (and an upstream process): keep those in the session.
      const mode: FuzzSample['session'] = c.methods.includes('initialize') ? 'valid' : sample.session;
      if (mode === 'valid') for (const k of c.countKeys) allowedKeys.add(k);
      const headers: Record<string, string> =
        mode === 'valid'
          ? session.headers
          : mode === 'bogus'
            ? { ...session.headers, 'mcp-session-id': 'bogus' }
            : MCP_HEADERS;
      httpSent++;
      let response: RawResponse;
      try {
        response = await rawRequest(url, { headers, body: sample.body, timeoutMs: 30_000 });
      } catch (error) {
        problems.push(`no answer (${String(error)}) to ${sample.body.slice(0, 200)}`);
        continue;
      }
      const problem = checkHttpAnswer(c, mode, response);
      if (problem)
        problems.push(
          `${problem}: ${mode} ${sample.body.slice(0, 200)} → ${response.status} ${response.text.slice(0, 200)}`,
        );
      if (problems.length > 10) break;
    }

    // stdio: everything written as lines, then every valid request must have had its answer.
    const stdioSamples = fc.sample(fuzzSample, { seed: SEED + 1, numRuns: STDIO_RUNS });
    const expected = new Set<string | number>();
    const cancelled = new Set<string | number>();
    const stdioStarted = Date.now();
    let stdioSent = 0;
    for (const sample of stdioSamples) {
      if (Date.now() - stdioStarted > BUDGET_MS / 2) break;
      const c = classify(sample.body);
      if (c.single) {
        for (const k of c.countKeys) allowedKeys.add(k);
        for (const id of c.requestIds) expected.add(id);
        for (const id of c.cancels) cancelled.add(id);
      }
      stdioSent++;
      await peer.send(sample.body);
    }
    const final = await peer.request('final', 'tools/call', {
      name: 'count',
      arguments: { key: 'final-stdio' },
    });
    expect(final.result).toMatchObject({ structuredContent: { key: 'final-stdio', value: 1 } });
    // A request the fuzz cancelled (by chance: ids are random) may go unanswered, as MCP says.
    for (const id of cancelled) expected.delete(id);
    const unanswered = () => [...expected].filter((id) => !peer.messages.some((m) => m.id === id));
    await vi
      .waitFor(() => expect(unanswered().length, 'answers to every valid stdio request').toBe(0), {
        ...PATIENTLY,
        timeout: BUDGET_MS,
      })
      .catch(() => {});
    if (unanswered().length > 0)
      problems.push(`stdio requests never answered: ${JSON.stringify(unanswered().slice(0, 10))}`);
    if (peer.nonJson.length > 0) problems.push(`non-JSON on stdout: ${peer.nonJson.slice(0, 3).join(' | ')}`);

    expect(problems).toEqual([]);
    // Enough traffic went through to mean something, even on a slow machine.
    expect(httpSent).toBeGreaterThanOrEqual(Math.min(HTTP_RUNS, 300));
    expect(stdioSent).toBeGreaterThanOrEqual(Math.min(STDIO_RUNS, 300));

    // The process is alive, its memory sane, and a normal call works on both fronts.
    expect(isAlive(child)).toBe(true);
    const rssAfter = await rssOf(child.pid as number);
    expect(rssAfter).toBeLessThan(768 * 1024 * 1024);
    expect(rssAfter - rssBefore).toBeLessThan(256 * 1024 * 1024);
    const fresh = await rawSession(url, 'after-fuzz');
    const after = await fresh.call({
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 'final-http' } },
    });
    expect(after.result).toMatchObject({ structuredContent: { key: 'final-http', value: 1 } });
    const ping = await peer.request('final-ping', 'ping');
    expect(ping.result).toEqual({});

    // Executions only for valid calls, each valid intent at most once per caller.
    allowedKeys.add('final-stdio').add('final-http');
    const executions = readExecutions(counts);
    const executed = executions.map((e) => e.key);
    expect(executed.filter((k) => !allowedKeys.has(k))).toEqual([]);
    // One upstream process per session (HTTP fuzz, stdio, after-fuzz): re-initializations started none.
    expect(new Set(executions.map((e) => e.pid)).size).toBeLessThanOrEqual(3);
    console.info(
      `fuzz: ${httpSent} HTTP in ${((Date.now() - httpStarted) / 1000).toFixed(1)} s total, ${stdioSent} stdio lines; ` +
        `${executed.length} executions; RSS ${(rssBefore / 2 ** 20).toFixed(0)} → ${(rssAfter / 2 ** 20).toFixed(0)} MiB`,
    );
  }, 150_000);
});

/** What the gateway must answer to this body (by the SDK's schemas); a description of the mismatch, or undefined. */
function checkHttpAnswer(
  c: ReturnType<typeof classify>,
  mode: FuzzSample['session'],
  response: RawResponse,
): string | undefined {
  if (response.status >= 500) return `server error ${response.status}`;
  let messages: Record<string, unknown>[];
  try {
    messages = messagesOf(response);
  } catch {
    return 'answer is not JSON';
  }
  const error = (messages[0] as { error?: { code?: number } } | undefined)?.error;
  // The session is checked before the body is read.
  if (mode === 'bogus') return response.status === 404 ? undefined : 'expected 404 for an unknown session';
  if (!c.json) return response.status === 400 && error?.code === -32700 ? undefined : 'expected 400 / -32700';
  if (!c.valid)
    return response.status === 400 && error?.code === -32600 ? undefined : 'expected 400 / -32600';
  if (mode === 'none') return response.status === 400 ? undefined : 'expected 400 without a session';
  // An initialize inside a live session: refused by the SDK transport (a well-formed one) or by the gateway session.
  if (c.methods.includes('initialize') && response.status === 400)
    return error?.code === -32600 ? undefined : 'expected -32600 for a second initialize';
  if (c.requestIds.length === 0)
    return response.status === 202 ? undefined : 'expected 202 for notifications/responses';
  if (response.status !== 200) return 'expected 200';
  const missing = c.requestIds.filter((id) => !messages.some((m) => m.id === id));
  if (missing.length > 0) return `no answer for ids ${JSON.stringify(missing)}`;
  const initialize = c.methods.indexOf('initialize');
  if (initialize >= 0) {
    const answer = messages.find((m) => m.id === c.requestIds[initialize]) as { error?: { code?: number } };
    if (answer?.error?.code !== -32600) return 'expected -32600 for a second initialize';
  }
  return undefined;
}

function waitForUrlOnStderr(child: ChildProcess, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no URL within ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${stderr}`)));
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const url = /Streamable HTTP on (http:\S+)/.exec(stderr)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    });
  });
}

/** A POST whose body is streamed in chunks without Content-Length; the answer may come (and the socket close) before the upload ends. */
function chunkedPost(url: string, headers: Record<string, string>, body: string): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { ...headers, 'transfer-encoding': 'chunked' },
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', () => {});
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', (error) => {
      // The server cut the upload off after answering: that answer is what counts.
      if (!answered) reject(error);
    });
    const data = Buffer.from(body);
    let offset = 0;
    const pump = () => {
      while (offset < data.length && !answered && !req.destroyed) {
        const piece = data.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        if (!req.write(piece)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!req.destroyed) req.end();
    };
    pump();
  });
}
