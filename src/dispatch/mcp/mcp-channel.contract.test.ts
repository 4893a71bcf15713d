import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixtureArgs } from '../../../test/support/compiled-fixtures.js';
import { RECEIVED_LOG } from '../../../test/support/counting-mcp-server.js';
import { channelContract } from '../channel.contract.js';
import { McpChannel } from './mcp-channel.js';
import { UpstreamConnection } from './upstream.js';

const SERVER = fileURLToPath(new URL('../../../test/support/counting-mcp-server.ts', import.meta.url));

/**
 * MCP through the channel contract: a real MCP server (official SDK, stdio)
 * that counts each `tools/call` and the execution id in its `_meta`, and
 * answers, echoes a secret, exits before answering, or never starts.
 */
channelContract('MCP', () => {
  let connection: UpstreamConnection | undefined;
  let dir: string | undefined;
  return {
    targetHonoursKey: false,
    async open(behaviour, secrets, secret) {
      dir = mkdtempSync(join(tmpdir(), 'idem-mcp-contract-'));
      const at = dir;
      // No credential of its own: the secret stands for any the process resolved (which the engine knows).
      secrets.add(secret);
      connection = new UpstreamConnection(
        {
          name: 'counting',
          command: process.execPath,
          args: [...fixtureArgs(SERVER), '--dir', at, '--behaviour', behaviour, '--secret', secret],
        },
        { onRequest: async (r) => ({ jsonrpc: '2.0', id: r.id, result: {} }), onNotification: () => {} },
        { stderr: 'ignore' },
      );
      const started = connection.start({
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'contract', version: '1' },
      });
      if (behaviour === 'unreachable') await started.catch(() => {});
      else await started;
      const channel = new McpChannel({
        name: 'contract_tool',
        upstreamTool: 'act',
        upstreamName: 'counting',
        upstream: connection,
        params: {},
        meta: undefined,
        waitMs: 100,
      });
      const received = async () => {
        const file = join(at, RECEIVED_LOG);
        if (!existsSync(file)) return [];
        return readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as string | null);
      };
      return { channel, args: { order_id: 'o-1' }, far: { received } };
    },
    async cleanup() {
      await connection?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
});
