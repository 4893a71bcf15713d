/**
 * "Another server's result" (issue 42, item 1): a replay is never another server's answer.
 *
 * Two gateway processes on ONE data directory (two entries of a client's config, each wrapped as
 * `idem gateway -- <server>`, the default data directory — which two processes are designed to
 * share), each in front of a different server that the same interpreter starts:
 * - the published memory server, `npx -y @modelcontextprotocol/server-memory`, twice, with another
 *   `MEMORY_FILE_PATH` each: `create_entities` with the same arguments through both must create the
 *   entity in both graphs;
 * - two tiny servers, `node a.mjs` and `node b.mjs` (fixtures/item-server.mjs), with the same tool:
 *   `create_item` through both must run on both.
 * And the other side of the rule: the SAME server behind two gateways on one data directory is
 * one server — a restarted agent's retry through the second gateway is replayed, not run again.
 *
 * The real CLI (dist/) on stdio, driven by the official SDK client, as a desktop client runs it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { IDEM_CLI } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';

const FIXTURES = join(REPO_ROOT, 'test/gateway/fixtures');
const MEMORY_SERVER = ['npx', '-y', '@modelcontextprotocol/server-memory'];
/** One agent: the same client name behind both gateways, as two entries of one client's config. */
const AGENT = 'desktop-agent';

const open: Client[] = [];
afterEach(async () => {
  // Closing the client ends the gateway's stdin: the gateway and its upstream exit.
  for (const client of open.splice(0)) await client.close().catch(() => {});
});
afterAll(removeTemporaries);

/** `idem gateway -- <server…>` on stdio, started in `cwd` with `env` on top of this process's environment. */
async function stdioGateway(
  server: string[],
  options: { dataDir: string; env?: Record<string, string>; cwd?: string },
) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [IDEM_CLI, 'gateway', '--', ...server],
    cwd: options.cwd ?? REPO_ROOT,
    env: {
      ...(process.env as Record<string, string>),
      // The package is in this repository's node_modules: npx never needs the registry.
      npm_config_offline: 'true',
      ...options.env,
      IDEM_DATA_DIR: options.dataDir,
    },
    stderr: 'ignore',
  });
  const client = new Client({ name: AGENT, version: '1.0.0' });
  await client.connect(transport);
  open.push(client);
  return (name: string, args: Record<string, unknown>) =>
    client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
}

const ADA = { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] };

/** The entity names a memory server's graph file holds. */
function entitiesIn(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type?: string; name?: string })
    .filter((item) => item.type === 'entity')
    .map((item) => item.name as string);
}

/** The titles the item server `name` (a.mjs, b.mjs) created in `dir`. */
function itemsOf(dir: string, name: string): string[] {
  const log = join(dir, `${name}.log`);
  return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
}

const replayed = (result: CallToolResult) => result._meta?.['io.idem/replayed'] === true;

describe('two different servers started by one interpreter, two gateways on one data directory', () => {
  it('npx -y @modelcontextprotocol/server-memory twice, another MEMORY_FILE_PATH each: both graphs get the entity', async () => {
    const dataDir = freshDir('same-server-data');
    const graphs = freshDir('same-server-graphs');
    const [fileA, fileB] = [join(graphs, 'a.jsonl'), join(graphs, 'b.jsonl')];
    const callA = await stdioGateway(MEMORY_SERVER, { dataDir, env: { MEMORY_FILE_PATH: fileA } });
    const callB = await stdioGateway(MEMORY_SERVER, { dataDir, env: { MEMORY_FILE_PATH: fileB } });

    const first = await callA('create_entities', ADA);
    const second = await callB('create_entities', ADA);
    expect(first.isError ?? false).toBe(false);
    expect(second.isError ?? false, textOf(second)).toBe(false);
    expect(replayed(first)).toBe(false);
    expect(replayed(second), 'the second server answered with the first server’s stored result').toBe(false);
    expect(second._meta?.['io.idem/execution-id']).not.toBe(first._meta?.['io.idem/execution-id']);
    expect(entitiesIn(fileA)).toEqual(['Ada']);
    expect(entitiesIn(fileB)).toEqual(['Ada']);
    // And each server, asked, holds its own.
    expect(textOf(await callB('read_graph', {}))).toContain('Ada');

    // One handle (named after what runs), two servers: `idem executions show` says both.
    const actionOf = async (result: CallToolResult) => {
      const ref = result._meta?.['io.idem/execution-id'] as string;
      const shown = await runIdem(['executions', 'show', ref, '--json'], { dataDir });
      return (JSON.parse(shown.stdout) as { action: { target: string; server: string } }).action;
    };
    const [actionA, actionB] = [await actionOf(first), await actionOf(second)];
    expect(actionA).toMatchObject({
      channel: 'mcp',
      target: 'server-memory',
      server: expect.stringMatching(/^srv_/),
    });
    expect(actionB).toMatchObject({
      channel: 'mcp',
      target: 'server-memory',
      server: expect.stringMatching(/^srv_/),
    });
    expect(actionB.server).not.toBe(actionA.server);
  });

  it('node a.mjs and node b.mjs, the same tool and arguments: each server runs its own call', async () => {
    const dataDir = freshDir('same-server-data');
    const items = freshDir('same-server-items');
    const env = { ITEMS_DIR: items };
    const callA = await stdioGateway(['node', 'a.mjs'], { dataDir, env, cwd: FIXTURES });
    const callB = await stdioGateway(['node', 'b.mjs'], { dataDir, env, cwd: FIXTURES });

    const first = await callA('create_item', { title: 'invoice 7' });
    const second = await callB('create_item', { title: 'invoice 7' });
    expect(textOf(first)).toContain('a created invoice 7');
    expect(replayed(second), 'b answered with a’s stored result').toBe(false);
    expect(textOf(second)).toContain('b created invoice 7');
    expect(itemsOf(items, 'a')).toEqual(['invoice 7']);
    expect(itemsOf(items, 'b')).toEqual(['invoice 7']);
  });
});

describe('the same server behind two gateways on one data directory is one server', () => {
  it('a restarted agent’s retry through the second gateway is replayed, not run again (memory server)', async () => {
    const dataDir = freshDir('same-server-data');
    const file = join(freshDir('same-server-graphs'), 'graph.jsonl');
    const env = { MEMORY_FILE_PATH: file };
    const callA = await stdioGateway(MEMORY_SERVER, { dataDir, env });
    const first = await callA('create_entities', ADA);
    expect(replayed(first)).toBe(false);

    // The agent never read that answer (it crashed): restarted, it retries through another process.
    await open.splice(0).pop()?.close();
    const callB = await stdioGateway(MEMORY_SERVER, { dataDir, env });
    const retry = await callB('create_entities', ADA);
    expect(replayed(retry)).toBe(true);
    expect(retry._meta?.['io.idem/execution-id']).toBe(first._meta?.['io.idem/execution-id']);
    // The stored answer is the first run's (a second run would have answered that nothing was new).
    expect(retry.content.slice(1)).toEqual(first.content);
    expect(entitiesIn(file)).toEqual(['Ada']);
  });

  it('node a.mjs behind two gateways at once: the retry through the second is replayed, a ran once', async () => {
    const dataDir = freshDir('same-server-data');
    const items = freshDir('same-server-items');
    const env = { ITEMS_DIR: items };
    const callA = await stdioGateway(['node', 'a.mjs'], { dataDir, env, cwd: FIXTURES });
    const callB = await stdioGateway(['node', 'a.mjs'], { dataDir, env, cwd: FIXTURES });

    const first = await callA('create_item', { title: 'invoice 8' });
    const retry = await callB('create_item', { title: 'invoice 8' });
    expect(replayed(retry)).toBe(true);
    expect(retry._meta?.['io.idem/execution-id']).toBe(first._meta?.['io.idem/execution-id']);
    expect(itemsOf(items, 'a')).toEqual(['invoice 8']);
  });
});
