/**
 * What users of other MCP gateways expect of the HTTP front (issue 26, item
 * 5): CORS for the origins the operator listed, a liveness and a readiness
 * probe. Real sockets, a real gateway, a real stdio upstream that the test
 * kills; nothing sleeps.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { MCP_HEADERS, rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

const running: RunningGateway[] = [];
const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of running) await gateway.close();
  removeTemporaries();
});

const APP = 'https://app.example';
const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'browser', version: '1' } },
});
const list = (value: unknown) =>
  String(value ?? '')
    .toLowerCase()
    .split(',')
    .map((h) => h.trim());

describe('CORS on the listed origins', () => {
  it('a preflight is answered 204 before auth, with the MCP headers allowed; the answer exposes Mcp-Session-Id; other origins get 403', async () => {
    const gateway = await startHttpGateway({
      upstreams: { counter: countingUpstream(freshDir('counts')) },
      http: { allowed_origins: [APP] },
      auth: {
        bearer: [{ token_sha256: createHash('sha256').update('browser-token').digest('hex'), actor: 'web' }],
      },
    });
    running.push(gateway);
    const preflight = await rawRequest(gateway.url, {
      method: 'OPTIONS',
      headers: {
        host: new URL(gateway.url).host,
        origin: APP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(APP);
    expect(list(preflight.headers['access-control-allow-methods'])).toEqual(
      expect.arrayContaining(['get', 'post', 'delete']),
    );
    expect(list(preflight.headers['access-control-allow-headers'])).toEqual(
      expect.arrayContaining([
        'authorization',
        'content-type',
        'mcp-session-id',
        'mcp-protocol-version',
        'last-event-id',
        'mcp-method',
        'mcp-name',
      ]),
    );

    const answered = await rawRequest(gateway.url, {
      headers: { ...MCP_HEADERS, origin: APP, authorization: 'Bearer browser-token' },
      body: initialize,
    });
    expect(answered.status).toBe(200);
    expect(answered.headers['mcp-session-id']).toBeTruthy();
    expect(answered.headers['access-control-allow-origin']).toBe(APP);
    expect(list(answered.headers['access-control-expose-headers'])).toEqual(
      expect.arrayContaining(['mcp-session-id', 'www-authenticate']),
    );
    // A refusal is readable by the page too (its challenge names what to do).
    const unauthorized = await rawRequest(gateway.url, {
      headers: { ...MCP_HEADERS, origin: APP },
      body: initialize,
    });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers['access-control-allow-origin']).toBe(APP);

    const stranger = await rawRequest(gateway.url, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(stranger.status).toBe(403);
    expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
  });
});

/** The crashing fixture as a stdio upstream: starts.log has its pids; while refuse-start exists it will not start. */
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

describe('/healthz and /readyz', () => {
  it('liveness answers without auth or a known Host; readiness goes not-ready while an upstream is down and the store cannot be read, and back', async () => {
    const dir = freshDir('ready-upstream');
    const gateway = await startHttpGateway({
      upstreams: { flaky: crashingUpstream(dir) },
      auth: {
        bearer: [{ token_sha256: createHash('sha256').update('agent-token').digest('hex'), actor: 'a' }],
      },
    });
    running.push(gateway);
    const probe = (path: string) =>
      rawRequest(new URL(path, gateway.url).href, { method: 'GET', headers: { host: '10.0.0.7:8787' } });

    const live = await probe('/healthz');
    expect(live.status).toBe(200);
    expect(JSON.parse(live.text)).toEqual({ status: 'ok' });
    const idle = await probe('/readyz');
    expect(idle.status).toBe(200);
    expect(JSON.parse(idle.text)).toEqual({
      status: 'ready',
      ready: true,
      store: 'ok',
      upstreams: { configured: 1, down: 0 },
    });

    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { authorization: 'Bearer agent-token' } },
      }),
    );
    clients.push(client);
    await vi.waitFor(() => expect(startsOf(dir).length, 'the upstream to start').toBe(1), PATIENTLY);
    // Killed, and kept from coming back: the gateway is restarting it.
    writeFileSync(join(dir, 'refuse-start'), '');
    process.kill(startsOf(dir).at(-1) as number, 'SIGKILL');
    await vi.waitFor(
      async () => expect((await probe('/readyz')).status, 'readiness to say the upstream is down').toBe(503),
      PATIENTLY,
    );
    const down = JSON.parse((await probe('/readyz')).text);
    expect(down).toMatchObject({ status: 'not_ready', ready: false, upstreams: { configured: 1, down: 1 } });
    // Counts, never names: a probe is answered to anyone.
    expect(JSON.stringify(down)).not.toContain('flaky');
    expect((await probe('/healthz')).status).toBe(200);

    unlinkSync(join(dir, 'refuse-start'));
    await vi.waitFor(
      async () => expect((await probe('/readyz')).status, 'readiness once the upstream is back').toBe(200),
      PATIENTLY,
    );

    // The store stops answering (closed under the gateway): not ready.
    await gateway.gateway.store.close();
    const noStore = await probe('/readyz');
    expect(noStore.status).toBe(503);
    expect(JSON.parse(noStore.text)).toMatchObject({ ready: false, store: 'unreachable' });
  });
});
