import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { sleep } from '../../src/testing/counting-target.js';
import { RawMcpHttp } from '../../src/testing/raw-mcp-http.js';
import { REPO_ROOT } from '../support/gateway-process.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-session-expiry-'));
let gateway: Gateway | undefined;
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
        listen: { http: { host: '127.0.0.1', port: 0, session_idle_timeout: 400 } },
        upstreams: {
          up: {
            command: process.execPath,
            args: [
              '--import',
              'tsx',
              join(REPO_ROOT, 'test/gateway/fixtures/crashing-server.ts'),
              '--dir',
              dir,
            ],
            cwd: REPO_ROOT,
          },
        },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    const url = (await gateway.serveHttp()).url;
    const raw = new RawMcpHttp(url);
    await raw.initialize();
    const pid = Number(readFileSync(join(dir, 'starts.log'), 'utf8').trim().split('\n')[0]);
    expect(alive(pid)).toBe(true);
    // Activity keeps it open.
    for (let i = 0; i < 4; i++) {
      await sleep(150);
      expect((await raw.post({ jsonrpc: '2.0', id: `p${i}`, method: 'ping' }))[0]).toMatchObject({
        result: {},
      });
    }
    await sleep(1_200);
    for (let i = 0; i < 50 && alive(pid); i++) await sleep(50);
    expect(alive(pid)).toBe(false);
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
