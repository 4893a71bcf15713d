/**
 * Secrets echoed back through the gateway. The upstream (fixtures/echo-server.ts)
 * repeats its arguments in text, in nested structuredContent, URL-encoded in
 * a link, and in a thrown error; its schema marks `password` (format:
 * password) and `api_key` (writeOnly) secret. The caller that sent them gets
 * the live answer as the upstream gave it; what the store keeps, what a
 * repeat of the call is replayed, and what `idem executions show --json`
 * prints hold none of them.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { META } from '../../src/executions/answers.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';

const ECHO_SERVER = join(REPO_ROOT, 'test/gateway/fixtures/echo-server.ts');
const PASSWORD = 'hunter2-correct-horse';
// Characters that change when URL-encoded or JSON-escaped: the echo quotes it both ways.
const API_KEY = 'sk_live_51H/q+z"x"y';
const ENCODED_KEY = encodeURIComponent(API_KEY);
const ESCAPED_KEY = JSON.stringify(API_KEY).slice(1, -1);

const running: RunningGateway[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const gateway of running.splice(0)) await gateway.close();
});
afterAll(removeTemporaries);

async function gatewayWithEcho(): Promise<RunningGateway> {
  const gateway = await startHttpGateway({
    upstreams: {
      echo: { command: process.execPath, args: [...fixtureArgs(ECHO_SERVER)], cwd: REPO_ROOT },
    },
    // Failures kept (after_failure: replay), so that the stored one is handed back again.
    tools: { connect: { replay: 'keyed' }, connect_failing: { replay: 'keyed', after_failure: 'replay' } },
  });
  running.push(gateway);
  return gateway;
}

async function client(url: string): Promise<Client> {
  const c = new Client({ name: 'secrets-agent', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(c);
  return c;
}

const args = { host: 'db.internal', password: PASSWORD, api_key: API_KEY };

function expectNoSecret(value: unknown): void {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  for (const secret of [PASSWORD, API_KEY, ENCODED_KEY, ESCAPED_KEY]) expect(text).not.toContain(secret);
}

describe('secrets echoed back by an upstream', () => {
  it('reach the caller that sent them, and are kept out of the store, the replay and `executions show`', async () => {
    const gateway = await gatewayWithEcho();
    const first = (await (
      await client(gateway.url)
    ).callTool({ name: 'connect', arguments: args })) as CallToolResult;
    // The live answer is the upstream's own, to the caller who sent the secrets.
    expect(textOf(first)).toContain(PASSWORD);
    expect(JSON.stringify(first.structuredContent)).toContain(ENCODED_KEY);
    const ref = first._meta?.[META.executionId] as string;

    const stored = await gateway.gateway.store.get(ref);
    expect(stored?.state).toBe('completed');
    expectNoSecret(stored);
    expect(stored?.outcome?.result.structuredContent).toEqual({
      echoed: {
        request: { host: 'db.internal', password: '[secret]', api_key: '[secret]' },
        url: 'https://db.internal/?key=[secret]',
      },
    });

    // A repeat (a new session: a restarted agent) gets the stored copy.
    const replay = (await (
      await client(gateway.url)
    ).callTool({ name: 'connect', arguments: args })) as CallToolResult;
    expect(replay._meta?.[META.replayed]).toBe(true);
    expect(textOf(replay)).toContain('[secret]');
    expectNoSecret(replay);

    const shown = await runIdem(
      ['executions', 'show', ref, '--json', '--db', join(gateway.dataDir, 'idem.db')],
      {
        dataDir: gateway.dataDir,
      },
    );
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout).execution.id).toBe(ref);
    expectNoSecret(shown.stdout);
  });

  it('are kept out of a stored failure whose error message quotes them', async () => {
    const gateway = await gatewayWithEcho();
    const first = (await (
      await client(gateway.url)
    ).callTool({
      name: 'connect_failing',
      arguments: args,
    })) as CallToolResult;
    expect(first.isError).toBe(true);
    expect(textOf(first)).toContain(`admin:${PASSWORD}`);
    const ref = first._meta?.[META.executionId] as string;

    const stored = await gateway.gateway.store.get(ref);
    expect(stored?.state).toBe('failed');
    expectNoSecret(stored);
    expect(JSON.stringify(stored?.outcome)).toContain('admin:[secret] refused');

    const replay = (await (
      await client(gateway.url)
    ).callTool({
      name: 'connect_failing',
      arguments: args,
    })) as CallToolResult;
    expect(replay.isError).toBe(true);
    expect(replay._meta?.[META.replayed]).toBe(true);
    expectNoSecret(replay);
  });
});
