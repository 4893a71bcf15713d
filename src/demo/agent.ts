import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf } from '../executions/answers.js';

// The demo's agent: the official SDK client over Streamable HTTP, and how it reads what it got back.

export async function pollStatus(client: Client, ref: string): Promise<CallToolResult> {
  let last: CallToolResult | undefined;
  for (let i = 0; i < 50; i++) {
    last = (await client.callTool({ name: 'idem_execution_status', arguments: { ref } })) as CallToolResult;
    if (!idemCodeOf(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return last as CallToolResult;
}

export function refOf(result: CallToolResult): string {
  return (result.structuredContent as { idem: { ref: string } }).idem.ref;
}

export function summarize(result: CallToolResult): string {
  const code = idemCodeOf(result);
  const text = (result.content[0] as { text?: string } | undefined)?.text ?? '';
  if (code) return `${code} (ref ${refOf(result)})`;
  const replayed = result._meta?.['io.idem/replayed'] === true ? ' [stored result, replayed]' : '';
  return `${result.isError ? 'error: ' : ''}${text}${replayed}`;
}

export async function connect(url: string, fetch?: typeof globalThis.fetch): Promise<Client> {
  const client = new Client({ name: 'idem-demo-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {}));
  return client;
}
