/**
 * A tiny MCP server built with the Idem library, for `idem probe` in server
 * mode: `record` appends its `key` as one line to COUNT_FILE — an effect that
 * a shell command can count.
 *
 *   COUNT_FILE=/tmp/counts.txt node --import tsx examples/probe-counter.ts
 *   idem probe --tool record --args '{"key":"{key}"}' \
 *     --count "grep -cx '{key}' /tmp/counts.txt" -- node --import tsx examples/probe-counter.ts
 */
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { Idem } from '../src/index.js';

const countFile = process.env.COUNT_FILE;
if (!countFile) {
  process.stderr.write('probe-counter: set COUNT_FILE\n');
  process.exit(2);
}
const idem = await Idem.open(); // SQLite under IDEM_DATA_DIR, or the per-user data directory
const server = new McpServer({ name: 'probe-counter', version: '1.0.0' });
idem.tool(
  server,
  'record',
  { description: 'Records one visit under `key` (an effect).', inputSchema: { key: z.string() } },
  async ({ key }) => {
    appendFileSync(countFile, `${key}\n`);
    return { content: [{ type: 'text', text: `recorded ${key}` }] };
  },
);
await idem.connect(server, new StdioServerTransport());
