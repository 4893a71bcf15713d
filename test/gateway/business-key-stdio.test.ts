import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingUpstream } from '../support/counting-upstream.js';
import { idemCommand } from '../support/idem-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { executionsOf } from './fixtures/counting-server.js';

/**
 * A business key across two stdio gateway processes: each agent runs its own
 * `idem gateway` (the CLI) and the two share one data directory, so one
 * store. The actor on stdio is the local identity plus the client's name: two
 * client names, two actors. One counting server is mounted twice:
 * `own__count` keys per actor, `shared__count` shares keys across actors.
 */
describe('business key across two stdio gateway processes (two client names)', () => {
  const clients: Client[] = [];
  const dataDir = freshDir('bizkey-stdio-data');
  const counts = freshDir('bizkey-stdio-counts');
  type Call = (name: string, args: Record<string, unknown>) => Promise<CallToolResult>;
  let agentA: Call;
  let agentB: Call;

  beforeAll(async () => {
    const config = join(dataDir, 'idem.yaml');
    // JSON is YAML.
    writeFileSync(
      config,
      JSON.stringify({
        data_dir: dataDir,
        upstreams: { own: countingUpstream(counts), shared: countingUpstream(counts) },
        tools: {
          own__count: { replay: 'keyed', scope: { business_key: 'key' } },
          shared__count: { replay: 'keyed', scope: { business_key: 'key', shared: true } },
        },
      }),
    );
    const start = async (clientName: string): Promise<Call> => {
      const cli = idemCommand(['gateway', '--config', config]);
      const client = new Client({ name: clientName, version: '1.0.0' });
      await client.connect(
        new StdioClientTransport({ command: cli.command, args: cli.args, cwd: cli.cwd, stderr: 'ignore' }),
      );
      clients.push(client);
      return (name, args) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
    };
    [agentA, agentB] = await Promise.all([start('agent-a'), start('agent-b')]);
  }, 60_000);

  afterAll(async () => {
    for (const client of clients.splice(0)) await client.close();
    removeTemporaries();
  });

  it("shared: the other process's agent gets IDEM_KEY_CONFLICT with the first's ref → one dispatch", async () => {
    const first = await agentA('shared__count', { key: 'X1', payload: 'amount=10' });
    expect(first.isError).toBeFalsy();
    const second = await agentB('shared__count', { key: 'X1', payload: 'amount=10' });
    expect(second.isError).toBe(true);
    expect((second.structuredContent as { idem: unknown }).idem).toMatchObject({
      code: 'IDEM_KEY_CONFLICT',
      ref: first._meta?.['io.idem/execution-id'],
      state: 'completed',
    });
    expect(executionsOf(counts, 'X1')).toBe(1);
  });

  it("per actor: each agent's call is its own action → two dispatches", async () => {
    expect((await agentA('own__count', { key: 'Y1' })).isError).toBeFalsy();
    expect((await agentB('own__count', { key: 'Y1' })).isError).toBeFalsy();
    expect(executionsOf(counts, 'Y1')).toBe(2);
  });
});
