/**
 * HTTP action tools through the in-process gateway: listed beside the
 * upstream's tools, run through the same identity → claim → journal →
 * dispatch → outcome path, their channel, target and credential NAME shown by
 * the status tool and `idem executions show`; and the credential's value found
 * nowhere — not in the SQLite file or its WAL, the journal export, the logs,
 * or any answer — even when the target echoes it back.
 */
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PaymentProcessor } from '../../src/demo/processor.js';
import { ConfigError } from '../../src/errors.js';
import { idemCodeOf, META } from '../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { lintGateway } from '../../src/gateway/lint.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

const SECRET = 'sk_live_Zq9+echo/me"please';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeTemporaries);

/** A target that rejects every request, quoting the Authorization header it got (as some APIs do). */
async function echoingTarget(status: number): Promise<number> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid key', received: req.headers.authorization }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

async function start(extra: Record<string, unknown> = {}) {
  const dataDir = freshDir('http-tools');
  const processor = new PaymentProcessor();
  const base = await processor.start();
  cleanups.push(() => processor.stop());
  const keyFile = join(dataDir, 'pay.key');
  writeFileSync(keyFile, `${SECRET}\n`);
  chmodSync(keyFile, 0o600);
  const rejecting = await echoingTarget(401);
  const failing = await echoingTarget(502);
  const reading = await echoingTarget(200);
  const logs: string[] = [];
  const logger = {
    warn: (m: string, f?: Record<string, unknown>) => logs.push(`${m} ${JSON.stringify(f ?? {})}`),
    error: (m: string, f?: Record<string, unknown>) => logs.push(`${m} ${JSON.stringify(f ?? {})}`),
  };
  const charge = (url: string) => ({
    description: 'Charge an order once.',
    input_schema: {
      type: 'object',
      properties: { order_id: { type: 'string' }, amount_cents: { type: 'integer' } },
      required: ['order_id', 'amount_cents'],
    },
    method: 'POST',
    url,
    body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
    credential: { name: 'pay', scheme: 'bearer' },
    allow: { addresses: ['127.0.0.1'] },
    contract: { replay: 'keyed', scope: { business_key: 'order_id' }, timeout: '5s' },
  });
  const config = GatewayConfigSchema.parse({
    data_dir: dataDir,
    listen: { http: { host: '127.0.0.1', port: 0 } },
    upstreams: { counter: countingUpstream(freshDir('http-tools-counts')) },
    credentials: { pay: { file: keyFile } },
    http_tools: {
      charge: charge(`${base}/charges`),
      charge_rejected: charge(`http://127.0.0.1:${rejecting}/charges`),
      charge_failing: charge(`http://127.0.0.1:${failing}/charges`),
      // A header that needs an argument the schema leaves optional.
      charge_tagged: {
        ...charge(`${base}/charges`),
        input_schema: {
          type: 'object',
          properties: {
            order_id: { type: 'string' },
            amount_cents: { type: 'integer' },
            tag: { type: 'string' },
          },
          required: ['order_id', 'amount_cents'],
        },
        headers: { 'X-Tag': '{tag}' },
      },
      // Read-only: never claimed, but what it answers is scrubbed like the others.
      look_up: {
        ...charge(`http://127.0.0.1:${reading}/orders/{order_id}`),
        method: 'GET',
        body: undefined,
        contract: { replay: 'read_only' },
      },
    },
    ...extra,
  });
  const gateway = await Gateway.start(config, { version: 'test', upstreamStderr: 'ignore', logger });
  const { url } = await gateway.serveHttp();
  cleanups.push(() => gateway.close());
  const client = new Client({ name: 'http-tools-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  return { gateway, client, processor, dataDir, logs, base };
}

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

describe('HTTP action tools in the gateway', () => {
  it('are listed beside the upstream tools and the status tool, with their own schema and honest annotations', async () => {
    const { client } = await start();
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['count', 'charge', 'idem_execution_status']));
    const charge = tools.find((t) => t.name === 'charge');
    expect(charge?.inputSchema.required).toEqual(['order_id', 'amount_cents']);
    // An action tool says nothing of itself: a keyed contract makes retries safe, not a deliberate repeat.
    expect(charge?.annotations).toEqual({ readOnlyHint: false, idempotentHint: false });
    expect(JSON.stringify(tools)).not.toContain(SECRET);
  });

  it('run once per intent; the status tool and `idem executions show` name channel, target and credential', async () => {
    const { client, processor, base, dataDir, gateway } = await start();
    const args = { order_id: 'A-1', amount_cents: 1500 };
    const [a, b] = await Promise.all([call(client, 'charge', args), call(client, 'charge', args)]);
    const answers = [a, b];
    const fresh = answers.find((r) => !r.isError);
    expect(fresh?.structuredContent).toMatchObject({ status: 201, body: { order_id: 'A-1' } });
    const ref = fresh?._meta?.[META.executionId] as string;
    expect(processor.keys).toEqual([ref]);
    expect(processor.charges).toBe(1);

    const replay = await call(client, 'charge', args);
    expect(replay._meta?.[META.replayed]).toBe(true);
    expect(processor.requests).toBe(1);

    const status = await call(client, 'idem_execution_status', { ref });
    expect(status._meta?.[META.action]).toEqual({ channel: 'http', target: base, credential: 'pay' });

    const invalid = await call(client, 'charge', { order_id: 'A-2' });
    expect(JSON.stringify(invalid)).toContain('IDEM_INVALID_INPUT');
    expect(processor.requests).toBe(1);

    await gateway.close();
    const shown = await runIdem(['executions', 'show', ref, '--db', join(dataDir, 'idem.db'), '--json'], {
      dataDir,
    });
    expect(JSON.parse(shown.stdout).action).toEqual({ channel: 'http', target: base, credential: 'pay' });
  });

  it('refuse an argument a header template needs and the call lacks, or cannot carry, with IDEM_INVALID_INPUT before anything is claimed — as SSH tools do', async () => {
    const { client, processor, dataDir, gateway } = await start();
    const args = { order_id: 'T-1', amount_cents: 100 };
    const missing = await call(client, 'charge_tagged', args);
    expect(idemCodeOf(missing)).toBe('IDEM_INVALID_INPUT');
    expect(JSON.stringify(missing)).toContain('missing_argument: the header X-Tag needs argument \\"tag\\"');
    expect(missing._meta?.[META.executionId]).toBeUndefined();
    const injected = await call(client, 'charge_tagged', { ...args, tag: 'blue\r\nX-Admin: 1' });
    expect(idemCodeOf(injected)).toBe('IDEM_INVALID_INPUT');
    expect(JSON.stringify(injected)).toContain('unsafe_argument: header X-Tag cannot carry a line break');
    expect(processor.requests).toBe(0);

    // Nothing was claimed, so nothing is retired or replayed: the corrected call is the first execution.
    const sent = await call(client, 'charge_tagged', { ...args, tag: 'blue' });
    expect(sent.isError).toBeFalsy();
    expect(sent._meta?.[META.replayed]).toBeUndefined();
    expect(processor.headers[0]?.['x-tag']).toBe('blue');
    await gateway.close();
    const listed = await runIdem(
      ['executions', 'list', '--tool', 'charge_tagged', '--db', join(dataDir, 'idem.db'), '--json'],
      { dataDir },
    );
    expect(JSON.parse(listed.stdout).map((r: { state: string }) => r.state)).toEqual(['completed']);
  });

  it("keep the credential's value out of the SQLite file and WAL, the journal export, the logs and every answer", async () => {
    const { client, processor, dataDir, logs, gateway } = await start();
    const answers: unknown[] = [];
    answers.push(await call(client, 'charge', { order_id: 'S-1', amount_cents: 100 }));
    const rejected = await call(client, 'charge_rejected', { order_id: 'S-2', amount_cents: 100 });
    answers.push(rejected);
    const failing = await call(client, 'charge_failing', { order_id: 'S-3', amount_cents: 100 });
    answers.push(failing);
    for (const r of [rejected, failing]) {
      answers.push(
        await call(client, 'idem_execution_status', { ref: r._meta?.[META.executionId] as string }),
      );
    }
    answers.push(await call(client, 'charge_rejected', { order_id: 'S-2', amount_cents: 100 }));
    const read = await call(client, 'look_up', { order_id: 'S-4', amount_cents: 0 });
    answers.push(read);
    expect(read.isError).toBeFalsy();
    expect(JSON.stringify(read)).toContain('[secret]');
    // A read-only call refused before it is sent is answered (it used to be left with no response).
    const refused = await call(client, 'look_up', { order_id: '..', amount_cents: 0 });
    expect(JSON.stringify(refused)).toContain('IDEM_DENIED');
    // The targets did get it, and did echo it: what reached the caller was scrubbed.
    expect(processor.headers[0]?.authorization).toBe(`Bearer ${SECRET}`);
    expect(JSON.stringify(rejected)).toContain('[secret]');
    expect(JSON.stringify(failing)).toContain('IDEM_OUTCOME_UNKNOWN');
    expect(JSON.stringify(failing)).toContain('HTTP 502');

    // Read the WAL before close checkpoints it away.
    const files = readdirSync(dataDir).filter((f) => f.startsWith('idem.db'));
    expect(files).toEqual(expect.arrayContaining(['idem.db', 'idem.db-wal']));
    const stored = files.map((f) => readFileSync(join(dataDir, f)));
    await gateway.close();
    const exported = await runIdem(['audit', 'export', '--db', join(dataDir, 'idem.db')], { dataDir });
    expect(exported.code).toBe(0);
    expect(exported.stdout).toContain('charge_rejected');

    const forms = [SECRET, JSON.stringify(SECRET).slice(1, -1), encodeURIComponent(SECRET)];
    for (const form of forms) {
      for (const bytes of stored) expect(bytes.includes(Buffer.from(form))).toBe(false);
      expect(exported.stdout).not.toContain(form);
      expect(logs.join('\n')).not.toContain(form);
      expect(JSON.stringify(answers)).not.toContain(form);
    }
  });

  it('refuse to start with a credential file others can read, an undeclared credential, or a host the URL builds unconfined', async () => {
    const dir = freshDir('http-tools-bad');
    const loose = join(dir, 'loose.key');
    writeFileSync(loose, SECRET);
    chmodSync(loose, 0o644);
    const base = {
      data_dir: dir,
      store: { kind: 'memory' },
      upstreams: { counter: countingUpstream(dir) },
    };
    const tool = (extra: Record<string, unknown>) => ({
      description: 'x',
      method: 'POST',
      url: 'https://api.example.com/x',
      ...extra,
    });
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { credentials: { pay: { file: loose } } },
        `credentials.pay: file ${loose} is readable or writable by others`,
      ],
      [
        { http_tools: { t: tool({ credential: { name: 'nope', scheme: 'bearer' } }) } },
        'credential "nope" is not declared',
      ],
      [{ http_tools: { t: tool({ url: 'https://{tenant}.example.com/x' }) } }, 'allow.hosts must list'],
      [{ http_tools: { idem_execution_status: tool({}) } }, "the name is the status tool's"],
      [{ http_tools: { t: tool({}) }, tools: { t: { replay: 'keyed' } } }, 'declared beside it'],
    ];
    for (const [extra, message] of cases) {
      const config = GatewayConfigSchema.parse({ ...base, ...extra });
      const started = Gateway.start(config, { version: 'test' });
      await expect(started).rejects.toBeInstanceOf(ConfigError);
      await expect(started).rejects.toThrow(message);
    }
  });
});

describe('idem lint on action tools', () => {
  it('reports an action tool without a contract, a credential that cannot be resolved now, and an upstream tool an action tool hides', async () => {
    const dir = freshDir('http-tools-lint');
    const tool = (extra: Record<string, unknown>) => ({
      description: 'x',
      method: 'POST',
      url: 'https://api.example.com/x',
      ...extra,
    });
    const config = GatewayConfigSchema.parse({
      data_dir: dir,
      store: { kind: 'memory' },
      upstreams: { counter: countingUpstream(dir) },
      credentials: { pay: { env: 'IDEM_TEST_LINT_UNSET_VARIABLE' } },
      http_tools: {
        count: tool({ contract: { replay: 'keyed' } }),
        uncontracted: tool({}),
        paying: tool({ credential: { name: 'pay', scheme: 'bearer' }, contract: { replay: 'keyed' } }),
      },
    });
    const findings = await lintGateway(config, 'test');
    const messages = findings.map((f) => f.message).join('\n');
    expect(messages).toContain('count: upstream counter offers a tool of this name');
    expect(messages).toContain('uncontracted: an action tool (http) without a contract');
    expect(messages).toContain(
      'paying: credential "pay" cannot be resolved: environment variable IDEM_TEST_LINT_UNSET_VARIABLE is not set; its calls would be denied',
    );
    expect(findings.filter((f) => f.tool === 'paying')).toHaveLength(1);
  });
});
