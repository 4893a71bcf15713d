import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** Starts a stdio MCP server, lists every page of its tools, and stops it (whatever happened). */
export async function listServerTools(
  command: string,
  args: readonly string[],
  version: string,
): Promise<Tool[]> {
  const client = new Client({ name: 'idem-init', version });
  // The server's stderr is the user's: a server that fails to start usually says why there.
  // Its environment is the one the gateway would give it (everything but Idem's own IDEM_*): a server
  // that needs its API key to start must get it here too.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith('IDEM_'),
    ),
  );
  const transport = new StdioClientTransport({ command, args: [...args], env, stderr: 'inherit' });
  try {
    await client.connect(transport);
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } finally {
    await client.close().catch(() => {});
  }
}
