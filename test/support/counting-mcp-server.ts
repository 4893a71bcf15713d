/**
 * A counting MCP server for the MCP channel's contract test (official SDK,
 * stdio, no Idem): every call of `act` appends the execution id it carried in
 * `_meta` to `<dir>/received.log` before anything else, so arrivals are
 * counted on the far side of the boundary.
 *
 *   node --import tsx test/support/counting-mcp-server.ts --dir DIR --behaviour answers
 *
 * Behaviours: `answers`; `echoes_secret` (its answer carries the value of
 * `--secret`); `drops` (exits once the call is counted, before
 * answering); `unreachable` (exits at start: it never serves).
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

export const RECEIVED_LOG = 'received.log';
const EXECUTION_ID_META = 'io.idem/execution-id';

const isMain = /[/\\]counting-mcp-server\.(ts|mjs)$/.test(process.argv[1] ?? '');
if (isMain) await serve();

async function serve(): Promise<void> {
  const option = (name: string) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const dir = option('--dir');
  const behaviour = option('--behaviour') ?? 'answers';
  if (!dir) {
    process.stderr.write('usage: counting-mcp-server.ts --dir <directory> --behaviour <behaviour>\n');
    process.exit(2);
  }
  if (behaviour === 'unreachable') process.exit(3);

  const server = new McpServer({ name: 'idem-contract-fixture', version: '1.0.0' });
  server.registerTool(
    'act',
    {
      description: 'Counts one action (an effect) and answers.',
      inputSchema: { order_id: z.string() },
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    async ({ order_id }, extra) => {
      const key = extra._meta?.[EXECUTION_ID_META];
      appendFileSync(join(dir, RECEIVED_LOG), `${JSON.stringify(typeof key === 'string' ? key : null)}\n`);
      if (behaviour === 'drops') process.exit(1);
      const echoed = behaviour === 'echoes_secret' ? ` with ${option('--secret')}` : '';
      return { content: [{ type: 'text', text: `acted on ${order_id}${echoed}` }] };
    },
  );
  await server.connect(new StdioServerTransport());
}
