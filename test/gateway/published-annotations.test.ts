/**
 * Issue 42, item 4: the annotations a client sees follow one rule whatever produced the contract
 * (docs/contracts.md, "Published annotations: one rule"). The real CLI (dist/) in front of the
 * reference filesystem server, listed by the official SDK client: once with zero config, once with
 * the config that `idem init -- <the same server>` writes (the same contracts, now declared).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { idemCommand } from '../support/idem-cli.js';
import { packageBin } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

const SERVER = packageBin('@modelcontextprotocol/server-filesystem', 'mcp-server-filesystem');
const TOOLS = ['write_file', 'edit_file', 'read_file', 'create_directory'];

afterAll(removeTemporaries);

/** The tools a stdio server lists to the official SDK client, by name. */
async function listed(command: string, args: string[], cwd?: string): Promise<Map<string, Tool>> {
  const client = new Client({ name: 'annotations-agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command,
      args,
      ...(cwd ? { cwd } : {}),
      env: { ...process.env, IDEM_DATA_DIR: freshDir('annotations-data') } as Record<string, string>,
      stderr: 'ignore',
    }),
  );
  try {
    const { tools } = await client.listTools();
    return new Map(tools.map((tool) => [tool.name, tool]));
  } finally {
    await client.close();
  }
}

describe('published annotations: one rule, zero config or the config idem init writes', () => {
  it('lists write_file, edit_file, read_file and create_directory with the same annotations both ways', async () => {
    const root = freshDir('annotations-root');
    const server = [process.execPath, SERVER, root];
    const dir = freshDir('annotations-init');
    const config = join(dir, 'idem.yaml');
    const init = await runIdem(['init', '--output', config, '--', ...server], { dataDir: dir });
    expect(init.code, init.stderr).toBe(0);
    // The draft declares a contract for each of them: what used to make the hints flip.
    const drafted = readFileSync(config, 'utf8');
    for (const tool of TOOLS) expect(drafted).toMatch(new RegExp(`^ {2}${tool}: \\{ replay: `, 'm'));

    // `idem gateway <args…>` on stdio, as an MCP client config runs it.
    const through = (args: string[]) => {
      const cli = idemCommand(['gateway', ...args]);
      return listed(cli.command, cli.args, cli.cwd);
    };
    const zeroConfig = await through(['--', ...server]);
    const initConfig = await through(['--config', config]);
    const annotations = (tools: Map<string, Tool>) =>
      Object.fromEntries(TOOLS.map((name) => [name, tools.get(name)?.annotations]));
    expect(annotations(initConfig)).toEqual(annotations(zeroConfig));
    // Each of them says all of readOnlyHint and idempotentHint itself: published as the server says.
    expect(annotations(zeroConfig)).toEqual(annotations(await listed(process.execPath, [SERVER, root])));

    // The server's own idempotentHint, under Idem's effectful contract, whichever produced it.
    expect(zeroConfig.get('write_file')?.annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: true,
    });
    expect(zeroConfig.get('edit_file')?.annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: false,
    });
    expect(zeroConfig.get('create_directory')?.annotations).toMatchObject({ idempotentHint: true });
    expect(zeroConfig.get('read_file')?.annotations).toMatchObject({ readOnlyHint: true });

    // idem lint says it the same way: the drafted contracts contradict none of the server's hints.
    const lint = await runIdem(['lint', '--config', config], { dataDir: dir });
    expect(lint.stdout).toContain('OK');
    expect(lint.code).toBe(0);
  });
});
