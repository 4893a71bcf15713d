/**
 * The HTTP front under a hostile or careless client (issue 8, items 3–7):
 * receipts settle on every path, a session and its event stream belong to
 * the actor that opened them, slow clients are cut off, refused connections
 * are closed, and serving without auth is said out loud (or refused).
 * Everything goes through real sockets to a real gateway and upstream.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { messagesOf, type RawResponse, rawRequest, rawSession } from '../support/raw-http.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

const countCall = (id: string | number, key: string, more: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'count', arguments: { key, ...more } },
});

const replyTo = (response: RawResponse, id: unknown) => messagesOf(response).find((m) => m.id === id);

describe('receipts settle on every path (refused by the transport, cancelled, session ended)', () => {
  let running: RunningGateway;
  let counts: string;
  beforeAll(async () => {
    counts = freshDir('counts');
    running = await startHttpGateway({ upstreams: { counter: countingUpstream(counts) } });
  });
  afterAll(async () => {
    writeFileSync(join(counts, 'release'), '');
    await running?.close();
    removeTemporaries();
  });

  it.each<[string, Record<string, string>, number]>([
    ['a bad Accept (406)', { accept: 'application/json' }, 406],
    ['a bad Content-Type (415)', { 'content-type': 'text/plain' }, 415],
    ['an unsupported protocol version (400)', { 'mcp-protocol-version': '1999-01-01' }, 400],
  ])(
    'a request refused for %s leaves no receipt: the resend of its id is answered, and runs once',
    async (label, bad, status) => {
      const session = await rawSession(running.url, `refused-${status}`);
      const key = `refused-${status}`;
      const before = running.gateway.receipts.size;
      const refused = await session.post(countCall(1, key), bad);
      expect(refused.status, label).toBe(status);
      expect(executionsOf(counts, key)).toBe(0);
      expect(running.gateway.receipts.size).toBe(before);
      // The same id again, now well-formed: answered (before the fix it waited forever).
      const resent = await rawRequest(running.url, {
        headers: session.headers,
        body: JSON.stringify(countCall(1, key)),
        timeoutMs: 15_000,
      });
      expect(replyTo(resent, 1)).toMatchObject({ result: { structuredContent: { key, value: 1 } } });
      expect(executionsOf(counts, key)).toBe(1);
    },
  );

  it('a cancelled request’s receipt is released: its resend gets an answer, and nothing runs twice', async () => {
    const session = await rawSession(running.url, 'cancelling');
    const call = countCall('c1', 'cancelled', { hold_file: 'release' });
    const first = session.post(call).catch(() => undefined);
    await vi.waitFor(() => expect(executionsOf(counts, 'cancelled'), 'the call to run').toBe(1), PATIENTLY);
    const cancel = await session.post({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'c1', reason: 'test' },
    });
    expect(cancel.status).toBe(202);
    const resent = await rawRequest(running.url, {
      headers: session.headers,
      body: JSON.stringify(call),
      timeoutMs: 15_000,
    });
    const reply = replyTo(resent, 'c1');
    // The execution layer answers (in flight, unknown, review): an honest answer, not a hang, not a second run.
    expect(reply?.result ?? reply?.error).toBeDefined();
    expect(['IDEM_IN_FLIGHT', 'IDEM_OUTCOME_UNKNOWN', 'IDEM_REVIEW_REQUIRED']).toContain(
      idemOf(reply?.result)?.code,
    );
    expect(executionsOf(counts, 'cancelled')).toBe(1);
    void first;
  });

  it('a session’s receipts go with it (DELETE); a resend in the ended session gets 404, not a hang', async () => {
    const session = await rawSession(running.url, 'deleting');
    const before = running.gateway.receipts.size;
    const reply = await session.call(countCall('d1', 'deleted'));
    expect(reply.result).toMatchObject({ structuredContent: { value: 1 } });
    expect(running.gateway.receipts.size).toBe(before + 1);
    const deleted = await rawRequest(running.url, { method: 'DELETE', headers: session.headers });
    expect(deleted.status).toBe(200);
    expect(running.gateway.receipts.size).toBe(before);
    const resent = await rawRequest(running.url, {
      headers: session.headers,
      body: JSON.stringify(countCall('d1', 'deleted')),
      timeoutMs: 15_000,
    });
    expect(resent.status).toBe(404);
    expect(executionsOf(counts, 'deleted')).toBe(1);
  });
});

const TOKENS = ['alice', 'mallory', 'carol', 'dave', 'erin', 'frank'] as const;
type Who = (typeof TOKENS)[number];
const tokenOf = (who: Who) => `token-of-${who}-for-tests`;
const bearer = (who: Who) => ({ authorization: `Bearer ${tokenOf(who)}` });

describe('sessions, event streams and receipts belong to their actor', () => {
  let running: RunningGateway;
  let counts: string;
  beforeAll(async () => {
    counts = freshDir('counts');
    running = await startHttpGateway({
      upstreams: { counter: countingUpstream(counts) },
      auth: {
        bearer: TOKENS.map((who) => ({
          token_sha256: createHash('sha256').update(tokenOf(who)).digest('hex'),
          actor: who,
        })),
      },
      receipts: { max_per_actor: 3 },
    });
  });
  afterAll(async () => {
    await running?.close();
    removeTemporaries();
  });

  it('another actor with the session id gets 404 for POST, GET and DELETE; the owner keeps the session', async () => {
    const alice = await rawSession(running.url, 'alice-agent', bearer('alice'));
    const stolen = { ...alice.headers, ...bearer('mallory') };
    const post = await rawRequest(running.url, {
      headers: stolen,
      body: JSON.stringify(countCall('m1', 'stolen')),
      timeoutMs: 15_000,
    });
    expect(post.status).toBe(404);
    const get = await rawRequest(running.url, { method: 'GET', headers: stolen, timeoutMs: 15_000 });
    expect(get.status).toBe(404);
    const del = await rawRequest(running.url, { method: 'DELETE', headers: stolen, timeoutMs: 15_000 });
    expect(del.status).toBe(404);
    expect(executionsOf(counts, 'stolen')).toBe(0);
    const reply = await alice.call(countCall('a1', 'alice-own'));
    expect(reply.result).toMatchObject({ structuredContent: { value: 1 } });
  });

  it('Last-Event-ID replays only the requesting session’s events: another actor never gets someone’s result', async () => {
    const erin = await rawSession(running.url, 'erin-agent', bearer('erin'));
    const call = await erin.post(countCall('e1', 'erin-secret'));
    const eventIds = [...call.text.matchAll(/^id: (.+)$/gm)].map((m) => m[1] as string);
    expect(eventIds.length).toBeGreaterThan(0);
    expect(call.text).toContain('erin-secret');
    const frank = await rawSession(running.url, 'frank-agent', bearer('frank'));
    for (const lastEventId of eventIds) {
      const replay = await rawRequest(running.url, {
        method: 'GET',
        headers: { ...frank.headers, 'last-event-id': lastEventId },
        timeoutMs: 5_000,
      });
      expect(replay.status).toBe(400);
      expect(replay.text).not.toContain('erin-secret');
    }
  });

  it('the receipt bound is per actor: one actor at its limit does not lock another out', async () => {
    const carol = await rawSession(running.url, 'carol-agent', bearer('carol'));
    for (const n of [1, 2, 3]) {
      const reply = await carol.call(countCall(`c${n}`, `carol-${n}`));
      expect(reply.result).toMatchObject({ structuredContent: { value: 1 } });
    }
    const refused = await carol.call(countCall('c4', 'carol-4'));
    expect(idemOf(refused.result)?.code).toBe('IDEM_RECEIPTS_FULL');
    expect(executionsOf(counts, 'carol-4')).toBe(0);
    const dave = await rawSession(running.url, 'dave-agent', bearer('dave'));
    const reply = await dave.call(countCall('d1', 'dave-1'));
    expect(reply.result).toMatchObject({ structuredContent: { value: 1 } });
  });

  it('an unauthenticated client trickling a body gets its 401 and the connection is closed', async () => {
    const { port } = new URL(running.url);
    const socket = await openSocket(Number(port));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{`,
    );
    const trickle = setInterval(() => socket.writable && socket.write(' '), 50);
    try {
      const closed = await closedWithin(socket, 5_000);
      expect(closed.data).toMatch(/^HTTP\/1\.1 401/);
      expect(closed.afterMs).toBeLessThan(5_000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });
});

describe('connection timeouts (test-injected, short)', () => {
  let running: RunningGateway;
  let port: number;
  beforeAll(async () => {
    running = await startHttpGateway({
      upstreams: { counter: countingUpstream(freshDir('counts')) },
      http: { timeouts: { headers: '400ms', request: '800ms', idle: '300ms' } },
    });
    port = Number(new URL(running.url).port);
  });
  afterAll(async () => {
    await running?.close();
    removeTemporaries();
  });

  it('a body trickled in slower than the request timeout: the server closes the connection', async () => {
    const socket = await openSocket(port);
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{`,
    );
    const trickle = setInterval(() => socket.writable && socket.write(' '), 50);
    try {
      const closed = await closedWithin(socket, 5_000);
      expect(closed.afterMs).toBeGreaterThanOrEqual(700);
      expect(closed.afterMs).toBeLessThan(5_000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  it('headers trickled in slower than the headers timeout: the server closes the connection', async () => {
    const socket = await openSocket(port);
    socket.write('POST /mcp HTTP/1.1\r\n');
    const trickle = setInterval(() => socket.writable && socket.write('X-Slow: y\r\n'), 50);
    try {
      const closed = await closedWithin(socket, 5_000);
      expect(closed.afterMs).toBeLessThan(5_000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  it('a headers timeout longer than the request timeout is taken as the request timeout (Node refuses it otherwise)', async () => {
    const other = await startHttpGateway({
      upstreams: { counter: countingUpstream(freshDir('counts')) },
      http: { timeouts: { headers: '60s', request: '1s' } },
    });
    try {
      const session = await rawSession(other.url, 'clamped');
      expect(session.sessionId).toBeTruthy();
    } finally {
      await other.close();
    }
  });

  it('a kept-alive connection left idle is closed after the idle timeout', async () => {
    const socket = await openSocket(port);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    try {
      const closed = await closedWithin(socket, 4_000);
      // Answered (400: no session), then left open only for the idle timeout, not Node's default 5 s.
      expect(closed.data).toMatch(/^HTTP\/1\.1 400/);
      expect(closed.afterMs).toBeLessThan(4_000);
    } finally {
      socket.destroy();
    }
  });
});

describe('serving HTTP without auth', () => {
  afterAll(() => removeTemporaries());

  const start = async (http: Record<string, unknown>, warnings: string[] = []) =>
    Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('exposure'),
        store: { kind: 'memory' },
        listen: { http: { port: 0, ...http } },
        upstreams: { counter: countingUpstream(freshDir('counts')) },
      }),
      { version: 'test', logger: { warn: (m) => warnings.push(m), error: () => {} } },
    );

  it('on loopback: serves, with a loud warning that says what the actor is', async () => {
    const warnings: string[] = [];
    const gateway = await start({ host: '127.0.0.1' }, warnings);
    try {
      await gateway.serveHttp();
      expect(warnings.join('\n')).toMatch(/^the HTTP front on 127.0.0.1 has no auth.*client name/);
    } finally {
      await gateway.close();
    }
  });

  it('stateless on loopback: the warning says every client is one actor', async () => {
    const warnings: string[] = [];
    const gateway = await start({ host: '127.0.0.1', stateless: true }, warnings);
    try {
      await gateway.serveHttp();
      expect(warnings.join('\n')).toMatch(
        /^the HTTP front on 127.0.0.1 has no auth.*EVERY client one and the same actor/,
      );
    } finally {
      await gateway.close();
    }
  });

  it('on a non-loopback address: refused before listening, unless allow_unauthenticated is set', async () => {
    // 192.0.2.1 (TEST-NET-1) is on no interface here: nothing can bind it, so nothing is exposed either way.
    const refused = await start({ host: '192.0.2.1' });
    try {
      await expect(refused.serveHttp()).rejects.toThrow(
        /refusing to serve HTTP on 192\.0\.2\.1 without auth/,
      );
    } finally {
      await refused.close();
    }
    const allowed = await start({ host: '192.0.2.1', allow_unauthenticated: true });
    try {
      // Past the check, the listen itself fails: this machine has no such address.
      await expect(allowed.serveHttp()).rejects.toMatchObject({ code: 'EADDRNOTAVAIL' });
    } finally {
      await allowed.close();
    }
  });

  it('the CLI refuses --listen on a non-loopback address without auth (exit 2), and --allow-unauthenticated lifts that', async () => {
    const upstream = countingUpstream(freshDir('counts'));
    const refused = await runIdem(
      ['gateway', '--listen', '192.0.2.1:0', '--', upstream.command, ...upstream.args],
      {
        dataDir: freshDir('cli'),
      },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /refusing to serve HTTP on 192\.0\.2\.1 without auth.*--allow-unauthenticated/,
    );
    const allowed = await runIdem(
      [
        'gateway',
        '--listen',
        '192.0.2.1:0',
        '--allow-unauthenticated',
        '--',
        upstream.command,
        ...upstream.args,
      ],
      { dataDir: freshDir('cli') },
    );
    // Refused by the config check: a usage error (2); past it, the listen failed: an operational one (1).
    expect(allowed.code).toBe(1);
    expect(allowed.stderr).toMatch(/idem gateway: warn: the HTTP front on 192.0.2.1 has no auth/);
    expect(allowed.stderr).toMatch(/EADDRNOTAVAIL/);
  });
});

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Waits for the server to close `socket`; what it sent, and after how long. Rejects past `timeoutMs`. */
function closedWithin(socket: Socket, timeoutMs: number): Promise<{ data: string; afterMs: number }> {
  const started = Date.now();
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    data += chunk;
  });
  socket.on('error', () => {});
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server kept the connection open for ${timeoutMs} ms; got: ${data}`)),
      timeoutMs,
    );
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ data, afterMs: Date.now() - started });
    });
  });
}
