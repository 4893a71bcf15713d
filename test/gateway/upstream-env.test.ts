import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { IDEM_CLI } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

/**
 * Issue 9.1: MCP clients hand servers their API keys through the environment
 * (a client's `env` block), so a stdio upstream behind the gateway must get
 * them — and never the gateway's own secrets.
 */
const ENV_SERVER = join(REPO_ROOT, 'test/gateway/fixtures/env-server.ts');
const envServer = { command: process.execPath, args: [...fixtureArgs(ENV_SERVER)], cwd: REPO_ROOT };
/** What a client's `env` block gives the gateway, next to the gateway's own variables. */
const CLIENT_ENV = {
  CLIENT_API_KEY: 'key-the-client-gave',
  OTHER_VAR: 'other',
  GATEWAY_BEARER: 'bearer-secret-of-the-gateway',
  IDEM_STORE_URL: '/nowhere/not-a-postgres-url.db',
};

const clients: Client[] = [];
const gateways: GatewayProcess[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of gateways) await gateway.kill();
  removeTemporaries();
});

async function upstreamVariable(client: Client, tool: string, name: string): Promise<string | null> {
  const result = await client.callTool({ name: tool, arguments: { name } });
  return (result.structuredContent as { value: string | null }).value;
}

describe("a stdio upstream gets the gateway's environment, minus Idem's own", () => {
  it('zero config (`idem gateway -- <command>`): a client-given variable arrives; IDEM_* does not', async () => {
    const dataDir = freshDir('env-zero-config');
    const client = new Client({ name: 'env-agent', version: '1' });
    clients.push(client);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [IDEM_CLI, 'gateway', '--', envServer.command, ...envServer.args],
        cwd: REPO_ROOT,
        env: { ...(process.env as Record<string, string>), ...CLIENT_ENV, IDEM_DATA_DIR: dataDir },
        stderr: 'ignore',
      }),
    );
    expect(await upstreamVariable(client, 'env', 'CLIENT_API_KEY')).toBe('key-the-client-gave');
    expect(await upstreamVariable(client, 'env', 'OTHER_VAR')).toBe('other');
    expect(await upstreamVariable(client, 'env', 'IDEM_STORE_URL')).toBeNull();
    expect(await upstreamVariable(client, 'env', 'IDEM_DATA_DIR')).toBeNull();
    expect(await upstreamVariable(client, 'env', 'PATH')).toBe(process.env.PATH);
  }, 60_000);

  it('with a config: bearer token variables stay out; env_inherit none and a list narrow; env applies on top', async () => {
    const dataDir = freshDir('env-config');
    const gateway = await startGatewayProcess(
      {
        data_dir: dataDir,
        auth: { bearer: [{ token_env: 'GATEWAY_BEARER', actor: 'agent' }] },
        upstreams: {
          all: envServer,
          none: { ...envServer, env_inherit: 'none', env: { SET_BY_CONFIG: 'from-config' } },
          list: { ...envServer, env_inherit: ['CLIENT_API_KEY', 'GATEWAY_BEARER'] },
        },
      },
      join(dataDir, 'idem.json'),
      { env: CLIENT_ENV },
    );
    gateways.push(gateway);
    const client = new Client({ name: 'env-agent', version: '1' });
    clients.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { Authorization: `Bearer ${CLIENT_ENV.GATEWAY_BEARER}` } },
      }),
    );
    expect(await upstreamVariable(client, 'all__env', 'CLIENT_API_KEY')).toBe('key-the-client-gave');
    expect(await upstreamVariable(client, 'all__env', 'OTHER_VAR')).toBe('other');
    expect(await upstreamVariable(client, 'all__env', 'GATEWAY_BEARER')).toBeNull();
    expect(await upstreamVariable(client, 'all__env', 'IDEM_STORE_URL')).toBeNull();

    expect(await upstreamVariable(client, 'none__env', 'CLIENT_API_KEY')).toBeNull();
    expect(await upstreamVariable(client, 'none__env', 'PATH')).toBe(process.env.PATH);
    expect(await upstreamVariable(client, 'none__env', 'SET_BY_CONFIG')).toBe('from-config');

    expect(await upstreamVariable(client, 'list__env', 'CLIENT_API_KEY')).toBe('key-the-client-gave');
    expect(await upstreamVariable(client, 'list__env', 'OTHER_VAR')).toBeNull();
    // Naming the gateway's bearer token variable does not hand it over.
    expect(await upstreamVariable(client, 'list__env', 'GATEWAY_BEARER')).toBeNull();
  }, 60_000);
});
