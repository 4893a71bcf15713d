/**
 * Issue 46.6: `--log-level debug` says the traffic — one line per client request and answer and
 * per upstream message (method, id, session, size, duration) — with the credentials' values
 * scrubbed, and the params cut short without leaving half a secret. At `info` it says none.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TRAFFIC_EXCERPT_CHARS } from '../../src/protocol/traffic-log.js';
import { createLog, type LogLevel } from '../../src/support/log.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { removeTemporaries } from '../support/temp-dirs.js';

const ECHO_SERVER = join(REPO_ROOT, 'test/gateway/fixtures/echo-server.ts');
const TOKEN_VARIABLE = 'TRAFFIC_TEST_TOKEN';
const TOKEN = 'tok_traffic_7f3a9c51e2';

const running: RunningGateway[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const gateway of running.splice(0)) await gateway.close();
  delete process.env[TOKEN_VARIABLE];
});
afterAll(removeTemporaries);

type Line = Record<string, unknown> & { level: string; msg: string };

async function gatewayLogging(level: LogLevel): Promise<{ url: string; lines: Line[] }> {
  process.env[TOKEN_VARIABLE] = TOKEN;
  const lines: Line[] = [];
  const log = createLog({ level, format: 'json', write: (line) => lines.push(JSON.parse(line) as Line) });
  const gateway = await startHttpGateway(
    {
      upstreams: { echo: { command: process.execPath, args: [...fixtureArgs(ECHO_SERVER)], cwd: REPO_ROOT } },
      // A credential no tool uses: its value is a secret the log must never show.
      credentials: { api: { env: TOKEN_VARIABLE } },
      tools: { connect: { replay: 'keyed' } },
    },
    { logger: log },
  );
  running.push(gateway);
  return { url: gateway.url, lines };
}

async function callConnect(url: string, host: string): Promise<void> {
  const client = new Client({ name: 'traffic-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  await client.callTool({ name: 'connect', arguments: { host, password: 'pw-123456', api_key: 'k-123456' } });
}

describe('--log-level debug: the traffic, one line a message', () => {
  it('says each client request and answer and each upstream message, with method, id, session, size and duration; the credential never appears', async () => {
    const { url, lines } = await gatewayLogging('debug');
    // The token lands across the cut of the params excerpt: neither whole nor half of it may show.
    const before = '{"name":"connect","arguments":{"host":"'.length;
    const host = `${'h'.repeat(TRAFFIC_EXCERPT_CHARS - before - 6)}${TOKEN}${'t'.repeat(5_000)}`;
    await callConnect(url, host);

    const traffic = lines.filter((l) => l.level === 'debug' && / → /.test(l.msg));
    const request = traffic.find((l) => l.msg === 'client → idem: request tools/call');
    expect(request).toMatchObject({
      method: 'tools/call',
      id: expect.anything(),
      session: expect.any(String),
    });
    expect(request?.bytes).toBeGreaterThan(5_000);
    // Bounded: the params cut to the excerpt (and a placeholder kept whole past it).
    expect(String(request?.params).length).toBeLessThanOrEqual(TRAFFIC_EXCERPT_CHARS + 20);
    const answer = traffic.find((l) => l.msg === 'idem → client: response tools/call');
    expect(answer).toMatchObject({ id: request?.id, session: request?.session, ms: expect.any(Number) });
    // The upstream's side: the call sent on, and its answer with how long it took.
    expect(traffic).toContainEqual(
      expect.objectContaining({ msg: 'idem → upstream echo: request tools/call', method: 'tools/call' }),
    );
    expect(traffic).toContainEqual(
      expect.objectContaining({ msg: 'upstream echo → idem: response tools/call', ms: expect.any(Number) }),
    );
    expect(traffic.some((l) => l.msg === 'client → idem: request initialize')).toBe(true);

    const written = JSON.stringify(lines);
    expect(written).not.toContain(TOKEN);
    // Not even the part the cut would have left.
    expect(written).not.toContain(TOKEN.slice(0, 12));
    expect(written).toContain('[secret]');
  }, 60_000);

  it('at info, no traffic line is written', async () => {
    const { url, lines } = await gatewayLogging('info');
    await callConnect(url, 'db.internal');
    expect(lines.filter((l) => / → /.test(l.msg))).toEqual([]);
  }, 60_000);
});
