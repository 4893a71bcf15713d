/**
 * The probe's counting upstream (gateway mode): an MCP server built with the
 * official SDK and nothing of Idem, whose one tool `act` counts each run in
 * `<dir>/effects.jsonl` before anything else, so an action is counted at the far
 * side of whatever gateway stands in front of it.
 *
 *   node counting-upstream.js --dir DIR                  stdio
 *   node counting-upstream.js --dir DIR --http-port N    Streamable HTTP at http://127.0.0.1:N/mcp
 *
 * `act` takes `key` (the action), `delay_ms` (answer that much later) and `hold`
 * (answer once `<dir>/release-<key>` exists: a call the probe can kill mid-way).
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { recordEffect } from './effects.js';
import { statelessMcp } from './stateless-http.js';

export const PROBE_TOOL = 'act';

/** The file whose existence lets a held `act` of `key` answer. */
export const releaseFile = (dir: string, key: string) => join(dir, `release-${key}`);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function probeServer(dir: string): McpServer {
  const server = new McpServer({ name: 'idem-probe-counter', version: '1.0.0' });
  server.registerTool(
    PROBE_TOOL,
    {
      description: 'Performs one action (counted at the far side) and answers.',
      inputSchema: {
        key: z.string(),
        delay_ms: z.number().int().min(0).optional(),
        hold: z.boolean().optional(),
      },
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    async ({ key, delay_ms, hold }) => {
      recordEffect(dir, { key, event: 'start', pid: process.pid });
      if (delay_ms) await pause(delay_ms);
      // Polled, not watched: a probe's hold lasts a moment, and fs.watch differs by platform.
      while (hold && !existsSync(releaseFile(dir, key))) await pause(20);
      recordEffect(dir, { key, event: 'end', pid: process.pid });
      return { content: [{ type: 'text', text: `done: ${key}` }] };
    },
  );
  return server;
}

async function serveHttp(dir: string, port: number): Promise<void> {
  const http = createServer(statelessMcp(() => probeServer(dir)));
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', resolve);
  });
  process.stderr.write(`counting upstream on http://127.0.0.1:${port}/mcp\n`);
}

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

const isMain = /[/\\]counting-upstream\.(ts|js)$/.test(process.argv[1] ?? '');
if (isMain) {
  const dir = option('--dir');
  if (!dir) {
    process.stderr.write('usage: counting-upstream --dir <directory> [--http-port <port>]\n');
    process.exit(2);
  }
  const port = option('--http-port');
  if (port) await serveHttp(dir, Number(port));
  else await probeServer(dir).connect(new StdioServerTransport());
}

/** The command that runs this upstream, beside this module: TypeScript under tsx, JavaScript from dist/. */
export function countingUpstreamCommand(dir: string, httpPort?: number): { command: string; args: string[] } {
  const here = new URL(import.meta.url);
  const ts = here.pathname.endsWith('.ts');
  const entry = new URL(`./counting-upstream.${ts ? 'ts' : 'js'}`, here).pathname;
  return {
    command: process.execPath,
    args: [
      ...(ts ? ['--import', 'tsx'] : []),
      entry,
      '--dir',
      dir,
      ...(httpPort === undefined ? [] : ['--http-port', String(httpPort)]),
    ],
  };
}
