import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ServedFixture, serveFixtureHttp } from '../conformance/fixture-http.js';
import { fixtureStdioCommand } from '../conformance/harness.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

/**
 * `subscriptions/listen` (2026-07-28) through the gateway, with the official
 * v2 client: the client's one listen stream hears the change notifications
 * of every upstream — a 2026-07-28 upstream's own listen stream (the
 * fixture, served in this process so its open streams can be counted) and a
 * 2025-era upstream's unsolicited notifications (the fixture serving 2025-era
 * revisions only, whose resources are subscribed with resources/subscribe).
 * Closing the stream ends the subscription upstream, in both revisions.
 */

const WATCHED = 'test://watched-resource';

afterAll(() => removeTemporaries());

/** A v2 client pinned to 2026-07-28 that records the change notifications it hears. */
async function listeningClient(target: { url: string } | { command: string; args: string[]; cwd: string }) {
  const client = new Client(
    { name: 'listen-test', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  const heard: { method: string; params: Record<string, unknown> }[] = [];
  for (const method of [
    'notifications/tools/list_changed',
    'notifications/prompts/list_changed',
    'notifications/resources/updated',
  ] as const)
    client.setNotificationHandler(method, (notification) => {
      heard.push({ method, params: (notification.params ?? {}) as Record<string, unknown> });
    });
  await client.connect(
    'url' in target
      ? new StreamableHTTPClientTransport(new URL(target.url))
      : new StdioClientTransport({ ...target, stderr: 'ignore' }),
  );
  return { client, heard };
}

// Over stdio each client starts its own gateway and legacy upstream (tsx compiles each): on a loaded
// two-core machine the suite's 60 s cap was reached (52 s, and a timeout, measured under load).
describe.each([
  ['HTTP stateful', 'http', false],
  ['HTTP stateless', 'http', true],
  ['stdio', 'stdio', false],
] as const)('subscriptions/listen through the %s front', { timeout: 180_000 }, (_name, front, stateless) => {
  let modern: ServedFixture;
  let running: RunningGateway | undefined;
  let target: { url: string } | { command: string; args: string[]; cwd: string };
  const legacy = fixtureStdioCommand(['--legacy-only']);

  beforeAll(async () => {
    modern = await serveFixtureHttp({ port: 0 });
    const upstreams = { modern: { url: modern.url }, legacy };
    // The fixtures' hooks change nothing but announce: declared harmless to run again, so each
    // call of the same hook reaches its upstream (the cautious default would replay the first).
    const tools = {
      modern__test_trigger_tool_change: { replay: 'read_only' },
      modern__test_trigger_prompt_change: { replay: 'read_only' },
      legacy__touch_resource: { replay: 'read_only' },
    } as const;
    if (front === 'http') {
      running = await startHttpGateway({ upstreams, tools, http: { stateless } });
      target = { url: running.url };
    } else {
      const configFile = `${freshDir('listen-stdio')}/idem.yaml`;
      const { writeFileSync } = await import('node:fs');
      writeFileSync(
        configFile,
        JSON.stringify({ data_dir: freshDir('listen-stdio-data'), upstreams, tools }),
      );
      target = idemCommand(['gateway', '--config', configFile]);
    }
  });

  afterAll(async () => {
    await running?.close();
    await modern?.close();
  });

  it('fans in both upstreams, stamps the client subscription id, and ends upstream when closed', async () => {
    const { client, heard } = await listeningClient(target);
    try {
      const subscription = await client.listen({
        toolsListChanged: true,
        resourceSubscriptions: [WATCHED],
      });
      // What some upstream can announce is honoured (the 2026-07-28 upstream announces tool changes,
      // the 2025-era one supports resource subscriptions); nothing asked is dropped here.
      expect(subscription.honoredFilter).toEqual({
        toolsListChanged: true,
        resourceSubscriptions: [WATCHED],
      });
      await vi.waitFor(
        () =>
          expect(
            modern.openListens(),
            'the gateway opened its listen stream on the 2026-07-28 upstream',
          ).toBe(1),
        PATIENTLY,
      );

      // The 2026-07-28 upstream's change, through its own listen stream.
      await client.callTool({ name: 'modern__test_trigger_tool_change', arguments: {} });
      await vi.waitFor(
        () =>
          expect(
            heard.some((n) => n.method === 'notifications/tools/list_changed'),
            'the tool change reached the client',
          ).toBe(true),
        PATIENTLY,
      );
      // The 2025-era upstream's resource update (it was subscribed to on the client's behalf).
      const touched = await client.callTool({ name: 'legacy__touch_resource', arguments: { uri: WATCHED } });
      expect(textOf(touched)).toBe(`notified ${WATCHED}`);
      await vi.waitFor(
        () =>
          expect(
            heard.some((n) => n.method === 'notifications/resources/updated' && n.params.uri === WATCHED),
            'the resource update reached the client',
          ).toBe(true),
        PATIENTLY,
      );
      // A prompt change was not asked for: not delivered.
      expect(heard.some((n) => n.method === 'notifications/prompts/list_changed')).toBe(false);

      await subscription.close();
      // Closing the client's stream closes the gateway's stream upstream, and unsubscribes the
      // 2025-era upstream's resource (nobody else listens to it).
      await vi.waitFor(
        () => expect(modern.openListens(), 'the upstream listen stream closed').toBe(0),
        PATIENTLY,
      );
      await vi.waitFor(async () => {
        const again = await client.callTool({
          name: 'legacy__touch_resource',
          arguments: { uri: WATCHED },
        });
        expect(textOf(again), 'the 2025-era upstream was unsubscribed').toBe(`not subscribed: ${WATCHED}`);
      }, PATIENTLY);
    } finally {
      await client.close();
    }
    if (front === 'http')
      // A session closed with a stream open ends it too.
      await vi.waitFor(
        () => expect(modern.openListens(), 'no listen stream left upstream').toBe(0),
        PATIENTLY,
      );
  });

  it('two clients listen at once: each hears only what it asked for, on its own stream', async () => {
    const tools = await listeningClient(target);
    const prompts = await listeningClient(target);
    try {
      await tools.client.listen({ toolsListChanged: true });
      await prompts.client.listen({ promptsListChanged: true });
      await vi.waitFor(() => expect(modern.openListens(), 'both upstream streams open').toBe(2), PATIENTLY);
      await tools.client.callTool({ name: 'modern__test_trigger_prompt_change', arguments: {} });
      await vi.waitFor(
        () =>
          expect(
            prompts.heard.some((n) => n.method === 'notifications/prompts/list_changed'),
            'the prompt change reached the prompt listener',
          ).toBe(true),
        PATIENTLY,
      );
      await tools.client.callTool({ name: 'modern__test_trigger_tool_change', arguments: {} });
      await vi.waitFor(
        () =>
          expect(
            tools.heard.some((n) => n.method === 'notifications/tools/list_changed'),
            'the tool change reached the tool listener',
          ).toBe(true),
        PATIENTLY,
      );
      expect(tools.heard.map((n) => n.method)).not.toContain('notifications/prompts/list_changed');
      expect(prompts.heard.map((n) => n.method)).not.toContain('notifications/tools/list_changed');
    } finally {
      await tools.client.close();
      await prompts.client.close();
    }
    await vi.waitFor(() => expect(modern.openListens(), 'both upstream streams closed').toBe(0), PATIENTLY);
  });
});
