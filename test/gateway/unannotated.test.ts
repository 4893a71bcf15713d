/**
 * Tools with neither annotations nor a contract — most published servers' —
 * behind the gateway: named once at start-up, listed by `idem lint` with the
 * line that settles each, replayed with a note that says so, and governed by
 * `defaults:` for those who know their server.
 *
 * The upstream is the published @modelcontextprotocol/server-everything with
 * the annotations taken out of its tools/list (fixtures/everything-unannotated.mjs);
 * every call runs the published server's own code.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { openStore } from '../../src/store/index.js';
import { stdioIdemClient } from '../support/gateway-process.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { firstTextOf, replayNoteOf, storedContentOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

const UNANNOTATED = {
  command: process.execPath,
  args: [join(REPO_ROOT, 'test/gateway/fixtures/everything-unannotated.mjs')],
};
const PUBLISHED = {
  command: process.execPath,
  args: [join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
};
const TOOLS = [
  'echo',
  'get-annotated-message',
  'get-env',
  'get-resource-links',
  'get-resource-reference',
  'get-structured-content',
  'get-sum',
  'get-tiny-image',
  'gzip-file-as-resource',
  'toggle-simulated-logging',
  'toggle-subscriber-updates',
  'trigger-long-running-operation',
  'simulate-research-query',
];
const TOGGLE = { name: 'toggle-simulated-logging', arguments: {} };
const SUM = { name: 'get-sum', arguments: { a: 2, b: 3 } };
const NOTICE = 'tools have neither annotations nor a contract';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {});
});
afterAll(removeTemporaries);

const call = (client: Client, params: { name: string; arguments: Record<string, unknown> }) =>
  client.callTool(params) as Promise<CallToolResult>;
const note = replayNoteOf;

/** An in-process gateway on loopback HTTP; `warnings` gets what the CLI would write to stderr. */
async function gateway(config: Record<string, unknown>) {
  const warnings: string[] = [];
  const gw = await Gateway.start(
    GatewayConfigSchema.parse({
      data_dir: freshDir('unannotated-data'),
      listen: { http: { host: '127.0.0.1', port: 0 } },
      ...config,
    }),
    {
      version: 'test',
      upstreamStderr: 'ignore',
      logger: { warn: (message) => warnings.push(message), error: (message) => warnings.push(message) },
    },
  );
  open.push(gw);
  const { url } = await gw.serveHttp();
  const connect = async (name = 'unannotated-agent') => {
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    open.push(client);
    return client;
  };
  return { gw, warnings, connect };
}

describe('idem gateway -- <an un-annotated server>, as an MCP client config runs it', () => {
  it('names the tools it treats as having effects once on stderr; their replays say so; a repeat runs again', async () => {
    const dataDir = freshDir('stdio-data');
    const { client, stderr } = await stdioIdemClient(
      ['gateway', '--', UNANNOTATED.command, ...UNANNOTATED.args],
      {
        name: 'stdio-agent',
        env: { IDEM_DATA_DIR: dataDir },
      },
    );
    open.push(client);

    const { tools } = await client.listTools();
    await client.listTools();
    await vi.waitFor(() => expect(stderr().includes(NOTICE), 'the start-up notice').toBe(true), PATIENTLY);
    const lines = stderr()
      .split('\n')
      .filter((line) => line.includes('neither annotations nor a contract'));
    expect(lines).toHaveLength(1);
    for (const name of TOOLS) expect(lines[0]).toContain(name);
    expect(lines[0]).toContain('tools: { get-annotated-message: { replay: read_only } }');
    expect(lines[0]).toContain('defaults: { replay: read_only }');
    // The gateway publishes them honestly: not read-only.
    expect(tools.find((t) => t.name === 'get-sum')?.annotations).toMatchObject({ readOnlyHint: false });

    // A read-like tool: its replay is marked as such, in the content the model reads.
    const first = await call(client, SUM);
    const again = await call(client, SUM);
    expect(storedContentOf(again)).toEqual(first.content);
    expect(note(again)).toContain('nothing was run now');

    // The toggle, repeated on purpose, really toggles.
    const on = await call(client, TOGGLE);
    expect(textOf(on)).toMatch(/^Started/);
    // Pressed again with nothing in between: a retry to Idem; the note says so, first.
    const pressedAgain = await call(client, TOGGLE);
    expect(firstTextOf(pressedAgain)).toMatch(/^\[idem\] Replayed, not run again/);
    expect(textOf(pressedAgain)).toMatch(/^Started/);
    const ref = on._meta?.['io.idem/execution-id'] as string;
    const off = await call(client, {
      name: 'idem_execution_status',
      arguments: { ref, action: 'repeat' },
    });
    expect(textOf(off)).toMatch(/^Stopped/);
    expect(stderr().split(NOTICE)).toHaveLength(2);

    const store = await openStore({ kind: 'sqlite', path: join(dataDir, 'idem.db') });
    try {
      expect(await store.list({ tool: TOGGLE.name })).toHaveLength(2);
      expect(await store.list({ tool: SUM.name })).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it('names them once per process, whatever the number of sessions', async () => {
    const { warnings, connect } = await gateway({ upstreams: { everything: UNANNOTATED } });
    await (await connect('one')).listTools();
    await (await connect('two')).listTools();
    const notices = warnings.filter((w) => w.includes('neither annotations nor a contract'));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^13 tools have neither annotations nor a contract/);
  });
});

describe('defaults:', () => {
  it('{ replay: read_only }: un-annotated tools run every time; an explicit contract still wins; nothing is named', async () => {
    const { gw, warnings, connect } = await gateway({
      upstreams: { everything: UNANNOTATED },
      defaults: { replay: 'read_only' },
      tools: { 'toggle-subscriber-updates': { replay: 'review' } },
    });
    const client = await connect();
    await client.listTools();
    expect(textOf(await call(client, TOGGLE))).toMatch(/^Started/);
    const second = await call(client, TOGGLE);
    expect(textOf(second)).toMatch(/^Stopped/);
    expect(second._meta?.['io.idem/replayed']).toBeUndefined();
    expect(await gw.store.list({ tool: TOGGLE.name })).toHaveLength(0);

    const subscriber = { name: 'toggle-subscriber-updates', arguments: {} };
    const once = await call(client, subscriber);
    const replayed = await call(client, subscriber);
    expect(replayed._meta?.['io.idem/replayed']).toBe(true);
    expect(storedContentOf(replayed)).toEqual(once.content);
    expect(warnings.filter((w) => w.includes('neither annotations nor a contract'))).toEqual([]);
  });

  it('{ replay: review, attach_window: 1m } sets their window; annotated tools follow their annotations as before', async () => {
    const { gw, connect } = await gateway({
      upstreams: { everything: UNANNOTATED },
      defaults: { replay: 'review', attach_window: '1m' },
    });
    const client = await connect();
    await call(client, TOGGLE);
    const [record] = await gw.store.list({ tool: TOGGLE.name });
    expect(record && record.attachUntil - record.createdAt).toBe(60_000);

    // The published server annotates its tools: defaults: does not apply to them.
    const annotated = await gateway({
      upstreams: { everything: PUBLISHED },
      defaults: { replay: 'read_only' },
    });
    const agent = await annotated.connect();
    expect(textOf(await call(agent, TOGGLE))).toMatch(/^Started/);
    const again = await call(agent, TOGGLE);
    expect(textOf(again)).toMatch(/^Started/);
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    const [annotatedRecord] = await annotated.gw.store.list({ tool: TOGGLE.name });
    expect(annotatedRecord && annotatedRecord.attachUntil - annotatedRecord.createdAt).toBe(15 * 60_000);
  });
});

describe('idem lint', () => {
  const lint = async (config: Record<string, unknown>, ...flags: string[]) => {
    const dir = freshDir('lint');
    const path = join(dir, 'idem.json');
    writeFileSync(path, JSON.stringify({ upstreams: { everything: UNANNOTATED }, ...config }));
    return runIdem(['lint', '--config', path, ...flags], { dataDir: dir });
  };

  it('lists every tool with neither annotations nor a contract, with the config line that settles it; exit 1', async () => {
    const result = await lint({ tools: { 'get-sum': { replay: 'read_only' } } }, '--json');
    const findings = JSON.parse(result.stdout) as { tool: string; message: string; settle?: string }[];
    const unsettled = findings.filter((f) => f.settle);
    expect(unsettled.map((f) => f.tool).sort()).toEqual(TOOLS.filter((t) => t !== 'get-sum').sort());
    expect(unsettled.find((f) => f.tool === 'get-env')?.settle).toBe(
      'tools: { get-env: { replay: read_only } }',
    );
    // The tool settled as read_only is not reported — not even as an annotation mismatch.
    expect(findings.filter((f) => f.tool === 'get-sum')).toEqual([]);
    expect(result.code).toBe(1);

    const text = await lint({});
    expect(text.stdout).toContain('echo: neither annotations nor a contract');
    expect(text.stdout).toContain('tools: { echo: { replay: read_only } }');
  });

  it('with defaults: they are settled; exit 0', async () => {
    const result = await lint({ defaults: { replay: 'read_only' } });
    expect(result.stdout).toContain('OK');
    expect(result.code).toBe(0);
  });
});
