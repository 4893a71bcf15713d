import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import {
  type ConformanceRun,
  compareRuns,
  fixtureStdioCommand,
  passingChecks,
  type RunningServer,
  runConformance,
  startFixture,
} from '../conformance/harness.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

/**
 * The gateway must be invisible to a conforming client: the MCP conformance
 * suite gives the same passing checks against the fixture directly and
 * through `idem gateway` (fixture as a stdio upstream, gateway on HTTP).
 */
describe('MCP conformance suite: directly vs through idem gateway', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-gw-conformance-'));
  let fixture: RunningServer;
  let gateway: Gateway;
  let gatewayUrl: string;
  let direct: ConformanceRun;
  let through: ConformanceRun;

  beforeAll(async () => {
    fixture = await startFixture();
    const upstream = fixtureStdioCommand();
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: dataDir,
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { fixture: upstream },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    gatewayUrl = (await gateway.serveHttp()).url;
    // Side by side: two separate servers, and most of a run is the suite waiting on its scenarios.
    [direct, through] = await Promise.all([
      runConformance({ url: fixture.url, suite: 'active' }),
      runConformance({ url: gatewayUrl, suite: 'active' }),
    ]);
  }, 240_000);

  afterAll(async () => {
    await gateway?.close();
    await fixture?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('every active scenario runs, and every check that passes directly passes through the gateway', () => {
    expect(direct.scenarios.length).toBeGreaterThanOrEqual(30);
    expect(through.scenarios.map((s) => s.scenario).sort()).toEqual(
      direct.scenarios.map((s) => s.scenario).sort(),
    );
    const { lost } = compareRuns(direct, through);
    expect(lost).toEqual([]);
    expect(passingChecks(through).size).toBe(passingChecks(direct).size);
    const failures = through.scenarios.flatMap((s) =>
      s.checks.filter((c) => c.status === 'FAILURE').map((c) => `${s.scenario}/${c.id}`),
    );
    expect(failures).toEqual([]);
  });

  it('SSE resumability: a client whose stream broke mid-call resumes with Last-Event-ID and gets the result', async () => {
    // The call is held at the upstream until the test releases it (the counting upstream's hold file),
    // so the stream breaks mid-call however slow the machine is; a fixed delay was a guess.
    const counts = freshDir('gw-resume');
    const held = await startHttpGateway({ upstreams: { counter: countingUpstream(counts) } });
    const { sessionId, post } = await openSession(held.url);
    const controller = new AbortController();
    const call = await post(
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'count', arguments: { key: 'resume-1', hold_file: 'release' } },
      },
      controller.signal,
    );
    expect(call.headers.get('content-type')).toContain('text/event-stream');
    // Read up to the priming event's id, then drop the connection, as a flaky network would.
    const reader = (call.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    let lastEventId: string | undefined;
    while (lastEventId === undefined) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      lastEventId = /^id: ?(.+)$/m.exec(text)?.[1]?.trim();
    }
    expect(lastEventId).toBeDefined();
    controller.abort();
    // Until the server has noticed the dropped connection it answers 409 (stream still attached); clients retry.
    let resumed: Response | undefined;
    await vi.waitFor(async () => {
      resumed = await fetch(held.url, {
        headers: {
          accept: 'text/event-stream',
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-11-25',
          'last-event-id': lastEventId as string,
        },
      });
      if (resumed.status !== 409) return;
      await resumed.text();
      throw new Error('the broken stream is still attached');
    }, PATIENTLY);
    expect(resumed?.status).toBe(200);
    // Only now does the call finish: its result can reach the client on the resumed stream alone.
    writeFileSync(join(counts, 'release'), '');
    const replayed = await readUntil(resumed as Response, (message) => message.id === 7);
    expect(replayed.result).toBeDefined();
    await held.close();
    removeTemporaries();
  });
});

async function openSession(url: string) {
  const headers = (sessionId?: string) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
  });
  const init = await fetch(url, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'resume-probe', version: '1' },
      },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id') as string;
  await init.text();
  await (
    await fetch(url, {
      method: 'POST',
      headers: headers(sessionId),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return {
    sessionId,
    post: (message: unknown, signal?: AbortSignal) =>
      fetch(url, {
        method: 'POST',
        headers: headers(sessionId),
        body: JSON.stringify(message),
        ...(signal ? { signal } : {}),
      }),
  };
}

/** Reads SSE `data:` messages until one satisfies `done`. */
async function readUntil(
  response: Response,
  done: (message: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let buffer = '';
  for (;;) {
    const { value, done: ended } = await reader.read();
    if (ended) throw new Error(`stream ended before the expected message: ${buffer}`);
    buffer += new TextDecoder().decode(value);
    for (const line of buffer.split('\n')) {
      if (!line.startsWith('data: ') || line.length <= 6) continue;
      const message = JSON.parse(line.slice(6)) as Record<string, unknown>;
      if (done(message)) {
        await reader.cancel();
        return message;
      }
    }
  }
}
