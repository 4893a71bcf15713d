import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { PaymentProcessor } from '../../src/demo/processor.js';
import { ConfigError } from '../../src/errors.js';
import { idemCodeOf } from '../../src/executions/answers.js';
import { GatewayConfigSchema, loadConfig } from '../../src/gateway/config/index.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

/**
 * Issue 26.2: an upstream that cannot be started costs only its own tools.
 * The others serve; its tools come when it does (the client is told to list
 * again); a gateway of action tools alone needs no upstream at all.
 */
const running: RunningGateway[] = [];
const processes: GatewayProcess[] = [];
const clients: Client[] = [];
const processors: PaymentProcessor[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of running) await gateway.close();
  for (const gateway of processes) await gateway.kill();
  for (const processor of processors) await processor.stop();
  removeTemporaries();
});

/** The crashing fixture, held down (it exits with code 3 at start) until `release(dir)`. */
function heldDownUpstream(dir: string) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'refuse-start'), '');
  return {
    command: process.execPath,
    args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/crashing-server.ts')), '--dir', dir],
    cwd: REPO_ROOT,
  };
}
const release = (dir: string) => unlinkSync(join(dir, 'refuse-start'));
const effectsOf = (dir: string) =>
  existsSync(join(dir, 'effects.log')) ? readFileSync(join(dir, 'effects.log'), 'utf8').split('\n') : [];

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'agent', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

describe('one upstream that cannot be started, beside one that can', () => {
  it('the good one serves; the dead one is retried, said on the log, and its tools come when it does', async () => {
    const badDir = freshDir('dead-bad');
    const logged: { level: string; message: string }[] = [];
    const at = (level: string) => (message: string) => logged.push({ level, message });
    const gateway = await startHttpGateway(
      {
        upstreams: { good: countingUpstream(freshDir('dead-good')), bad: heldDownUpstream(badDir) },
        tools: {
          good__count: { replay: 'keyed', scope: { business_key: 'key' } },
          bad__act: { replay: 'status', scope: { business_key: 'key' } },
        },
      },
      { logger: { warn: at('warn'), error: at('error'), info: at('info') } },
    );
    running.push(gateway);
    const client = await connect(gateway.url);
    let listChanged = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanged++;
    });
    // The client is told that the list may change: the dead upstream's tools are not in it yet.
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();
    expect(await names()).toEqual(['good__count', 'good__read_count', 'idem_execution_status']);
    expect((await call(client, 'good__count', { key: 'k1' })).structuredContent).toMatchObject({ value: 1 });
    // A call of the dead upstream's tool: nothing happened, safe to retry.
    const early = await call(client, 'bad__act', { key: 'early' });
    expect(idemCodeOf(early)).toBe('IDEM_NOT_EXECUTED');
    expect((early.content[0] as { text: string }).text).toContain(
      'upstream "bad" could not be listed: it is down',
    );
    // Each failed start is said, with how it ended and when the next try is.
    await vi.waitFor(
      () =>
        expect(
          logged.some((l) => l.message.startsWith('upstream bad restarted (attempt 1')),
          'a retry',
        ).toBe(true),
      PATIENTLY,
    );
    expect(logged).toContainEqual({
      level: 'error',
      message: expect.stringMatching(
        /^upstream bad could not be started: exited with code 3; retrying in \d+ ms; its tools are unavailable until it starts$/,
      ),
    });
    expect(logged.filter((l) => l.message.startsWith('upstream good started'))).toHaveLength(1);

    release(badDir);
    await vi.waitFor(
      () => expect(listChanged > 0, 'the dead upstream to come up and the client to be told').toBe(true),
      { ...PATIENTLY, timeout: 60_000 },
    );
    expect(await names()).toEqual(['bad__act', 'good__count', 'good__read_count', 'idem_execution_status']);
    expect((await call(client, 'bad__act', { key: 'late' })).isError).toBeFalsy();
    expect(effectsOf(badDir).filter((k) => k === 'late')).toHaveLength(1);
    expect(effectsOf(badDir)).not.toContain('early');
  }, 120_000);

  it('through the CLI: the session starts, stderr names the failure (log_level warn drops the start lines)', async () => {
    const dataDir = freshDir('dead-cli');
    const gateway = await startGatewayProcess(
      {
        data_dir: dataDir,
        log_level: 'warn',
        upstreams: {
          good: countingUpstream(freshDir('dead-cli-good')),
          bad: heldDownUpstream(freshDir('dead-cli-bad')),
        },
      },
      join(dataDir, 'idem.json'),
    );
    processes.push(gateway);
    const client = await connect(gateway.url);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('good__count');
    await vi.waitFor(
      () => expect(/could not be started/.test(gateway.stderr()), 'the failure on stderr').toBe(true),
      PATIENTLY,
    );
    expect(gateway.stderr()).toMatch(
      /^idem gateway: error: upstream bad could not be started: exited with code 3; retrying in \d+ ms/m,
    );
    expect(gateway.stderr()).not.toMatch(/upstream good started/);
  }, 120_000);
});

describe('a gateway without upstreams', () => {
  it('serves its HTTP action tools alone', async () => {
    const processor = new PaymentProcessor();
    processors.push(processor);
    const base = await processor.start();
    const gateway = await startHttpGateway({
      upstreams: {},
      http_tools: {
        charge: {
          description: 'Charge an order once.',
          input_schema: {
            type: 'object',
            properties: { order_id: { type: 'string' }, amount_cents: { type: 'integer' } },
            required: ['order_id', 'amount_cents'],
          },
          method: 'POST',
          url: `${base}/charges`,
          body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
          allow: { addresses: ['127.0.0.1'] },
          contract: { replay: 'keyed', scope: { business_key: 'order_id' }, timeout: '5s' },
        },
        // The config as a user writes it (the schema fills in the defaults).
      } as never,
    });
    running.push(gateway);
    const client = await connect(gateway.url);
    expect(client.getServerVersion()?.name).toBe('idem-gateway');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['charge', 'idem_execution_status']);
    const charged = await call(client, 'charge', { order_id: 'o-1', amount_cents: 500 });
    expect(charged.isError).toBeFalsy();
    expect(processor.charges).toBe(1);
    // Nothing to route a prompt to: Method not found, not a crash.
    await expect(client.listPrompts()).rejects.toThrow(/Method not found/);
  }, 60_000);

  it('and without action tools, is refused: there is nothing to serve', async () => {
    const path = join(freshDir('nothing'), 'idem.yaml');
    writeFileSync(path, 'upstreams: {}\n');
    expect(() => loadConfig(path)).toThrow(ConfigError);
    expect(() => loadConfig(path)).toThrow(/upstreams: nothing to serve/);
    expect(GatewayConfigSchema.safeParse({}).success).toBe(false);
  });
});
