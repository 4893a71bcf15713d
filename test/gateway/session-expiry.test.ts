import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { REPO_ROOT } from '../support/node22.js';
import { RawMcpHttp } from '../support/raw-mcp-http.js';
import { PATIENTLY } from '../support/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-session-expiry-'));
let gateway: Gateway | undefined;
/** The gateway's clock: the test moves it, so no step waits for real time to pass. */
let now = 1_000_000;
/** Long enough that the front's own timer (every half of it, at most a minute) does not sweep first. */
const IDLE_MS = 30 * 60_000;
afterAll(async () => {
  await gateway?.close();
  rmSync(dir, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('an idle HTTP session', () => {
  it('is closed after session_idle_timeout, and its upstream process with it; its id then gets 404', async () => {
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: dir,
        listen: { http: { host: '127.0.0.1', port: 0, session_idle_timeout: IDLE_MS } },
        upstreams: {
          up: {
            command: process.execPath,
            args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/crashing-server.ts')), '--dir', dir],
            cwd: REPO_ROOT,
            // Its first start is the session's process: none is started ahead for a next session.
            spare: false,
          },
        },
      }),
      { version: 'test', upstreamStderr: 'ignore', clock: () => now },
    );
    const served = await gateway.serveHttp();
    const url = served.url;
    const raw = new RawMcpHttp(url);
    await raw.initialize();
    const pid = Number(readFileSync(join(dir, 'starts.log'), 'utf8').trim().split('\n')[0]);
    expect(alive(pid)).toBe(true);
    // Activity keeps it open: four timeouts pass in all, but never one since the last request.
    for (let i = 0; i < 4; i++) {
      expect((await raw.post({ jsonrpc: '2.0', id: `p${i}`, method: 'ping' }))[0]).toMatchObject({
        result: {},
      });
      now += IDLE_MS - 1;
      expect(served.closeIdleSessions()).toBe(0);
    }
    expect(alive(pid)).toBe(true);
    now += 1;
    // Waits out the moment the server has not yet seen the last response close (the session is busy until then).
    await vi.waitFor(() => expect(served.closeIdleSessions()).toBe(1), PATIENTLY);
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 20_000, interval: 50 });
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': raw.sessionId as string,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'late', method: 'ping' }),
    });
    expect(res.status).toBe(404);
  }, 60_000);
});
