import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { fixtureArgs } from './compiled-fixtures.js';

/**
 * A fixture MCP server (`test/fixtures/<file>`, built with the library) on stdio, with `env` on
 * top of this process's environment, and a client on it. The client's name is the same every
 * time: the same actor, as an agent restarted on its host would be — what the kill tests need
 * for a retry in a new process to find the first one's execution.
 */
export async function startFixtureServer(file: string, env: Record<string, string>) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...fixtureArgs(join(import.meta.dirname, '../fixtures', file))],
    env: { ...process.env, ...env } as Record<string, string>,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'restarting-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** The lines a fixture wrote to `file` so far (its counter of what reached the far side). */
export const linesOf = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
