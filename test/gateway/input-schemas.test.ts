/**
 * A tool's input schema across sessions of the stateful gateway. Each session
 * lists the upstream's tools again; the gateway validates arguments and fills
 * in the schema's defaults before it identifies a call, so every session must
 * do that alike, or the same call gets another identity in a new session.
 *
 * The upstream (fixtures/schema-id-server.ts, the SDK's low-level Server)
 * gives its tool a schema with an `$id` and a default, and counts the calls
 * it served: the far side of the boundary. It declares no contract and no
 * annotations, so it gets the cautious default: an identical call of the same
 * actor within 15 minutes is answered with the stored result.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf } from '../support/tool-results.js';
import { callsIn } from './fixtures/schema-id-server.js';

const SCHEMA_ID_SERVER = join(REPO_ROOT, 'test/gateway/fixtures/schema-id-server.ts');

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {});
});
afterAll(removeTemporaries);

/** A session of the same agent (one client name: one actor), as after a restart. */
async function session(url: string): Promise<Client> {
  const client = new Client({ name: 'deploy-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  open.push(client);
  return client;
}

describe('input schemas across sessions', () => {
  it('a schema with an $id validates and fills in defaults in every session: the same call is one execution', async () => {
    const calls = freshDir('schema-id-calls');
    const gw = await startHttpGateway({
      upstreams: {
        deployer: {
          command: process.execPath,
          args: [...fixtureArgs(SCHEMA_ID_SERVER), '--dir', calls],
          cwd: REPO_ROOT,
        },
      },
    });
    open.push(gw);

    const first = (await (
      await session(gw.url)
    ).callTool({
      name: 'deploy',
      arguments: { service: 'api' },
    })) as CallToolResult;
    expect(first.isError).toBeFalsy();
    expect(callsIn(calls)).toEqual([{ service: 'api', region: 'eu-1' }]);

    // A new session (the agent restarted) sends the same call: the same intent, answered from the record.
    const second = await session(gw.url);
    const again = (await second.callTool({
      name: 'deploy',
      arguments: { service: 'api' },
    })) as CallToolResult;
    expect(again.isError).toBeFalsy();
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(again._meta?.['io.idem/execution-id']).toBe(first._meta?.['io.idem/execution-id']);
    expect(callsIn(calls)).toHaveLength(1);

    // And the schema is enforced there too: nothing reaches the upstream.
    const wrong = (await second.callTool({ name: 'deploy', arguments: { service: 5 } })) as CallToolResult;
    expect(wrong.isError).toBe(true);
    expect(idemOf(wrong)?.code).toBe('IDEM_INVALID_INPUT');
    expect(callsIn(calls)).toHaveLength(1);
  }, 60_000);
});
