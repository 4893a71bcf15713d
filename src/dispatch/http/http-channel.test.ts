import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PATIENTLY } from '../../../test/support/wait.js';
import { resolveContract } from '../../contracts/contract.js';
import { Credentials } from '../../credentials/index.js';
import { PaymentProcessor } from '../../demo/processor.js';
import { IDEM_CODES } from '../../errors.js';
import { idemCodeOf, META } from '../../executions/answers.js';
import type { Caller } from '../../executions/call.js';
import { ExecutionEngine } from '../../executions/engine.js';
import { Fingerprinter } from '../../identity/fingerprint.js';
import { KnownSecrets } from '../../identity/redaction.js';
import { MemoryStore } from '../../store/memory/memory-store.js';
import type { ToolResult } from '../../store/outcome.js';
import { actionCall } from '../action-call.js';
import { checkUrl } from './address-guard.js';
import type { HttpToolSpecInput } from './spec.js';
import { allowedTargets } from './targets.js';
import { httpActionTool } from './tool.js';

const fingerprinter = new Fingerprinter(randomBytes(32));
const alice: Caller = { actor: 'token:alice', session: 's1' };
const SECRET = 'sk_live_0123456789abcdef';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback server that answers each request with `respond` and counts what arrived. */
async function farSide(respond: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: { url: string; headers: IncomingMessage['headers'] }[] = [];
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => respond(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, seen };
}

async function setup(
  spec: (port: number) => Partial<HttpToolSpecInput>,
  options: { honoursKeys?: boolean; env?: NodeJS.ProcessEnv; port?: number; noProcessor?: boolean } = {},
) {
  const processor = new PaymentProcessor({ honoursKeys: options.honoursKeys ?? true });
  let port = options.port ?? 0;
  if (!options.noProcessor) {
    port = Number(new URL(await processor.start(port)).port);
    cleanups.push(() => processor.stop());
  }
  const secrets = new KnownSecrets();
  const env = options.env ?? { PAY_KEY: SECRET };
  const credentials = Credentials.fromConfig({ pay: { env: 'PAY_KEY' } }, secrets, { env });
  const dispatcherFor = vi.fn();
  const tool = httpActionTool(
    'charge',
    {
      description: 'Charge an order',
      method: 'POST',
      url: `http://127.0.0.1:${port}/charges`,
      body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
      credential: { name: 'pay', scheme: 'bearer' },
      allow: { addresses: ['127.0.0.1'] },
      timeout: '5s',
      contract: { replay: 'keyed', scope: { business_key: 'order_id' }, timeout: '10s' },
      ...spec(port),
    },
    { credentials },
  );
  cleanups.push(() => tool.channel.close());
  const store = new MemoryStore();
  const engine = new ExecutionEngine({ store, fingerprinter, knownSecrets: secrets });
  const contract = resolveContract(tool.contract, undefined);
  const run = (args: Record<string, unknown>, caller = alice) => {
    const { call, dispatch } = actionCall('charge', tool.channel, contract, args, caller);
    return engine.execute(call, dispatch);
  };
  return { processor, port, run, store, tool, env, dispatcherFor };
}

const text = (r: ToolResult) => r.content.map((c) => (c as { text?: string }).text ?? '').join('\n');
const refOf = (r: ToolResult) => r._meta?.[META.executionId] as string;

describe('HTTP action tool through the engine', () => {
  it('sends one request for concurrent identical calls, with the execution id as Idempotency-Key; a repeat gets the stored result', async () => {
    const { processor, run } = await setup(() => ({}));
    let release!: () => void;
    processor.hold = new Promise((resolve) => (release = resolve));
    const args = { order_id: 'o-1', amount_cents: 1200 };
    const first = run(args);
    await vi.waitFor(() => expect(processor.requests).toBe(1), PATIENTLY);
    const second = await run(args);
    expect(idemCodeOf(second)).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    release();
    const answer = await first;
    expect(answer.isError).toBeFalsy();
    expect((answer.structuredContent as { status: number }).status).toBe(201);
    expect(processor.keys).toEqual([refOf(answer)]);
    expect(processor.headers[0]?.authorization).toBe(`Bearer ${SECRET}`);

    const again = await run(args);
    expect(again._meta?.[META.replayed]).toBe(true);
    expect(processor.requests).toBe(1);
    expect(processor.charges).toBe(1);
  });

  it('a keyed target slower than the timeout: IDEM_OUTCOME_UNKNOWN, then the same call re-sends with the same key and the target charges once', async () => {
    const { processor, run } = await setup(() => ({ timeout: 300 }));
    let release!: () => void;
    processor.hold = new Promise((resolve) => (release = resolve));
    const args = { order_id: 'o-slow', amount_cents: 500 };
    const first = await run(args);
    expect(idemCodeOf(first)).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    expect(text(first)).toContain('No full answer within 300 ms');
    release();
    await vi.waitFor(() => expect(processor.charges).toBe(1), PATIENTLY);

    const recovered = await run(args);
    expect(recovered.isError).toBeFalsy();
    expect(processor.requests).toBe(2);
    expect(processor.keys[1]).toBe(processor.keys[0]);
    expect(processor.charges).toBe(1);
  });

  it('a target that ignores keys, under review: the unknown outcome needs an operator and is not re-sent', async () => {
    const { processor, run } = await setup(
      () => ({ timeout: 300, contract: { replay: 'review', scope: { business_key: 'order_id' } } }),
      { honoursKeys: false },
    );
    let release!: () => void;
    processor.hold = new Promise((resolve) => (release = resolve));
    const args = { order_id: 'o-review', amount_cents: 500 };
    expect(idemCodeOf(await run(args))).toBe(IDEM_CODES.IDEM_REVIEW_REQUIRED);
    expect(idemCodeOf(await run(args))).toBe(IDEM_CODES.IDEM_REVIEW_REQUIRED);
    release();
    await vi.waitFor(() => expect(processor.charges).toBe(1), PATIENTLY);
    expect(processor.requests).toBe(1);
  });

  it('connection refused before sending: IDEM_NOT_EXECUTED, and the retry runs once', async () => {
    const closed = await farSide(() => {});
    await cleanups.pop()?.(); // the port is free again: nothing listens on it
    const { processor, run, port } = await setup(() => ({}), { port: closed.port, noProcessor: true });
    const args = { order_id: 'o-refused', amount_cents: 700 };
    const refused = await run(args);
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(text(refused)).toContain('ECONNREFUSED');
    await processor.start(port);
    cleanups.push(() => processor.stop());
    const retried = await run(args);
    expect(retried.isError).toBeFalsy();
    expect(processor.requests).toBe(1);
    expect(processor.charges).toBe(1);
  });

  it('an unresolved credential: IDEM_DENIED naming it (never a value), nothing sent; once set, the call runs', async () => {
    const env: NodeJS.ProcessEnv = {};
    const { processor, run } = await setup(() => ({}), { env });
    const args = { order_id: 'o-cred', amount_cents: 100 };
    const denied = await run(args);
    expect(idemCodeOf(denied)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(text(denied)).toContain(
      'credential "pay" cannot be resolved: environment variable PAY_KEY is not set',
    );
    expect(processor.requests).toBe(0);
    env.PAY_KEY = SECRET;
    expect((await run(args)).isError).toBeFalsy();
    expect(processor.requests).toBe(1);
  });

  it('a credential the target echoes back (an error body quoting the header) reaches no answer and no stored result', async () => {
    const echo = await farSide((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad key', got: req.headers.authorization }));
    });
    const { run, store } = await setup(() => ({ url: `http://127.0.0.1:${echo.port}/charges` }), {
      noProcessor: true,
    });
    const answer = await run({ order_id: 'o-echo', amount_cents: 100 });
    expect(answer.isError).toBe(true);
    expect(echo.seen[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(JSON.stringify(answer)).not.toContain(SECRET);
    expect(text(answer)).toContain('[secret]');
    const stored = await store.get(refOf(answer));
    expect(JSON.stringify(stored)).not.toContain(SECRET);
  });

  it('a read-only tool too: an echoed credential reaches no answer, and a refused call is answered, not thrown', async () => {
    const echo = await farSide((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', got: req.headers.authorization }));
    });
    const { run, store } = await setup(
      () => ({
        method: 'GET',
        url: `http://127.0.0.1:${echo.port}/orders/{order_id}`,
        body: undefined,
        contract: { replay: 'read_only' },
      }),
      { noProcessor: true },
    );
    const answer = await run({ order_id: 'o-read' });
    expect(echo.seen[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(answer.isError).toBeFalsy();
    expect(JSON.stringify(answer)).not.toContain(SECRET);
    expect(JSON.stringify(answer)).toContain('[secret]');
    const refused = await run({ order_id: '..' });
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(text(refused)).toContain('"." or ".." path segment');
    expect(echo.seen).toHaveLength(1);
    // Read-only: nothing is claimed or stored.
    expect(await store.list()).toEqual([]);
  });

  it('a request undici would refuse to build (a header it cannot carry) is refused before sending, never "unknown"', async () => {
    const target = await farSide((_req, res) => res.end('ok'));
    const { run } = await setup(() => ({ url: `http://127.0.0.1:${target.port}/charges` }), {
      noProcessor: true,
      // Beyond Latin-1: no HTTP/1.1 header can carry it, so undici refuses the request as built.
      env: { PAY_KEY: 'sk_live_日本_0123456789' },
    });
    const refused = await run({ order_id: 'o-header', amount_cents: 1 });
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(text(refused)).toContain('could not be built');
    expect(target.seen).toHaveLength(0);
  });

  it('basic credentials: the base64 form is scrubbed as well', async () => {
    const echo = await farSide((req, res) => {
      res.writeHead(400);
      res.end(`rejected ${req.headers.authorization}`);
    });
    const { run } = await setup(
      () => ({
        url: `http://127.0.0.1:${echo.port}/charges`,
        credential: { name: 'pay', scheme: 'basic', username: 'shop' },
      }),
      { noProcessor: true },
    );
    const answer = await run({ order_id: 'o-basic', amount_cents: 1 });
    const encoded = Buffer.from(`shop:${SECRET}`).toString('base64');
    expect(echo.seen[0]?.headers.authorization).toBe(`Basic ${encoded}`);
    expect(JSON.stringify(answer)).not.toContain(encoded);
  });
});

describe('SSRF guards, before any connection', () => {
  it('a port built from the arguments: the allowed loopback port works, any other is refused and reached by nothing', async () => {
    const other = await farSide((_req, res) => res.end('reached'));
    const { processor, run, port } = await setup((p) => ({
      url: 'http://127.0.0.1:{port}/charges',
      allow: { ports: [p], addresses: ['127.0.0.1'] },
      contract: { replay: 'keyed', scope: 'actor' },
    }));
    const refused = await run({ port: other.port, order_id: 'o-port', amount_cents: 1 });
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(text(refused)).toContain(`port ${other.port} is not one this tool may reach`);
    expect(other.seen).toHaveLength(0);
    expect((await run({ port, order_id: 'o-port', amount_cents: 1 })).isError).toBeFalsy();
    expect(processor.requests).toBe(1);
  });

  it('a host built from the arguments outside allow.hosts, or a value that tries to add a host, is refused', async () => {
    const { processor, run, port } = await setup((p) => ({
      url: `http://{host}:${p}/charges`,
      allow: { hosts: ['127.0.0.1'], addresses: ['127.0.0.1'] },
      contract: { replay: 'keyed', scope: 'actor' },
    }));
    for (const host of ['localhost', '127.0.0.2', 'evil.example@127.0.0.1', `127.0.0.1:${port}/x#`]) {
      const answer = await run({ host, order_id: 'o-host', amount_cents: 1 });
      expect(idemCodeOf(answer), host).toBe(IDEM_CODES.IDEM_DENIED);
    }
    expect(processor.requests).toBe(0);
  });

  it('loopback, private, link-local and metadata addresses are refused unless allow.addresses names them; the connection is never opened', async () => {
    const secrets = new KnownSecrets();
    const credentials = Credentials.fromConfig({}, secrets);
    const dispatcherFor = vi.fn(() => {
      throw new Error('must not connect');
    });
    const resolved: Record<string, string> = {
      'internal.example': '10.1.2.3',
      'meta.example': '169.254.169.254',
      'meta6.example': 'fd00:ec2::254',
      'mapped.example': '::ffff:192.168.1.1',
      // The same mapping as a URL or a resolver may spell it: hex, not dotted.
      'mapped-hex.example': '::ffff:a9fe:a9fe',
      'nat64.example': '64:ff9b::a00:1',
      '6to4.example': '2002:7f00:1::1',
      'loop.example': '127.0.0.1',
    };
    const hosts = Object.keys(resolved);
    const tool = httpActionTool(
      'fetch',
      {
        description: 'x',
        method: 'GET',
        url: 'https://{host}/status',
        allow: { hosts },
      },
      {
        credentials,
        dispatcherFor,
        resolveHost: async (host) => {
          const address = resolved[host] as string;
          return { address, family: address.includes(':') ? 6 : 4 };
        },
      },
    );
    for (const host of hosts) {
      await expect(
        tool.channel.dispatch({ host }, { executionId: 'exe_1', redispatch: false }),
        host,
      ).rejects.toMatchObject({
        name: 'DispatchRefusedError',
        message: expect.stringContaining('may not reach'),
      });
    }
    expect(dispatcherFor).not.toHaveBeenCalled();
  });

  it('a redirect to a port the tool may not reach is not followed: the answer says so and the port sees nothing', async () => {
    const forbidden = await farSide((_req, res) => res.end('reached'));
    const redirecting = await farSide((_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${forbidden.port}/charges` });
      res.end();
    });
    const { run } = await setup(
      () => ({ url: `http://127.0.0.1:${redirecting.port}/charges`, redirects: 3 }),
      { noProcessor: true },
    );
    const answer = await run({ order_id: 'o-redirect', amount_cents: 1 });
    expect(idemCodeOf(answer)).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    expect(text(answer)).toContain(`port ${forbidden.port} is not one this tool may reach`);
    expect(redirecting.seen).toHaveLength(1);
    expect(forbidden.seen).toHaveLength(0);
  });

  it('a redirect within the allowed targets is followed when redirects allow it, with the same key', async () => {
    const final = await farSide((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    const hop = await farSide((_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${final.port}/done` });
      res.end();
    });
    const { run } = await setup(
      () => ({
        url: `http://127.0.0.1:${hop.port}/charges`,
        redirects: 1,
        allow: { ports: [hop.port, final.port], addresses: ['127.0.0.1'] },
      }),
      { noProcessor: true },
    );
    const answer = await run({ order_id: 'o-hop', amount_cents: 1 });
    expect(answer.structuredContent).toEqual({ status: 200, body: { ok: true } });
    expect(final.seen[0]?.headers['idempotency-key']).toBe(refOf(answer));
  });

  it('path and query values are percent-encoded: an argument cannot add a segment or a parameter, nor remove one', async () => {
    const target = await farSide((_req, res) => res.end('ok'));
    const { run } = await setup(
      () => ({
        method: 'GET',
        url: `http://127.0.0.1:${target.port}/orders/{order_id}/items?note={note}`,
        body: undefined,
        contract: { replay: 'read_only' },
      }),
      { noProcessor: true },
    );
    await run({ order_id: '../admin?drop=1', note: 'a&b=c#d' });
    expect(target.seen[0]?.url).toBe('/orders/..%2Fadmin%3Fdrop%3D1/items?note=a%26b%3Dc%23d');
    // ".." would make the parser send /items, out of /orders: refused, and the target sees nothing more.
    const refused = await run({ order_id: '..', note: '..' });
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(text(refused)).toContain('"." or ".." path segment');
    expect(target.seen).toHaveLength(1);
  });
});

describe('allow.hosts', () => {
  const spec = (hosts: string[]) =>
    ({ url: 'https://{host}/x', allow: { hosts } }) as unknown as Parameters<typeof allowedTargets>[1];

  it('are compared as a URL spells its host: case, punycode, IPv4 shorthand, IPv6 brackets', () => {
    const { allowed } = allowedTargets('t', spec(['API.Example.com', 'Bücher.example', '127.1', '::1']));
    expect(allowed.hosts).toEqual(['api.example.com', 'xn--bcher-kva.example', '127.0.0.1', '::1']);
    expect(() => checkUrl(new URL('https://bücher.example/x'), allowed)).not.toThrow();
    expect(() => checkUrl(new URL('https://api.example.com./x'), allowed)).toThrow('host api.example.com.');
  });

  it('refuse an entry that is not just a host, naming it', () => {
    expect(() => allowedTargets('t', spec(['api.example.com:8443']))).toThrow(
      'http_tools.t.allow.hosts: "api.example.com:8443" is more than a host',
    );
    expect(() => allowedTargets('t', spec(['api.example.com/v1']))).toThrow('is more than a host');
    expect(() => allowedTargets('t', spec(['exa mple.com']))).toThrow('is not a host name or address');
  });
});

describe('query parameters, optional headers and a credential in the query', () => {
  it('absent arguments leave their parameter or header out, an array repeats it, and an argument cannot stand in for the key', async () => {
    const far = await farSide((_req, res) => res.end('ok'));
    const credentials = Credentials.fromConfig({ pay: { env: 'PAY_KEY' } }, new KnownSecrets(), {
      env: { PAY_KEY: 'key 5+1x' },
    });
    const tool = httpActionTool(
      'search',
      {
        description: 'x',
        method: 'GET',
        url: `http://127.0.0.1:${far.port}/search?fixed=1`,
        query: { q: '{q}', tag: '{tags}', api_key: '{api_key}', range: '{from}-{to}' },
        optional_headers: { 'X-Trace': '{trace}' },
        credential: { name: 'pay', scheme: 'query', param: 'api_key' },
        allow: { addresses: ['127.0.0.1'] },
        contract: { replay: 'read_only' },
      },
      { credentials },
    );
    cleanups.push(() => tool.channel.close());
    const send = (args: Record<string, unknown>) =>
      tool.channel.dispatch(args, { executionId: null, redispatch: false });
    await send({ q: 'a&b=c', tags: ['x', 'y'], api_key: 'forged', from: 1 });
    await send({ q: 'z', from: 1, to: 2, trace: 't-1' });
    expect(far.seen.map((s) => s.url)).toEqual([
      '/search?fixed=1&q=a%26b%3Dc&tag=x&tag=y&api_key=key+5%2B1x',
      '/search?fixed=1&q=z&range=1-2&api_key=key+5%2B1x',
    ]);
    expect(far.seen[0]?.headers['x-trace']).toBeUndefined();
    expect(far.seen[1]?.headers['x-trace']).toBe('t-1');
    expect(() => tool.channel.check?.({ q: { nested: true } })).toThrow(
      'must be a string, number or boolean to be placed in the query parameter q',
    );
  });
});
