import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DEFAULT_STATUS_TOOL } from '../defaults.js';
import { idemCodeOf } from '../executions/answers.js';

// The demo's agent: the official SDK client over Streamable HTTP, and how it reads what it got back.

/**
 * Asks the status tool until the execution has a final answer. A scenario
 * first waits for what it is about (the processor counted the charge, the
 * host ran the command), so this takes a round or two; the deadline only ends
 * a run whose count is already wrong, however slow the machine is.
 */
export async function pollStatus(client: Client, ref: string, deadlineMs = 60_000): Promise<CallToolResult> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const last = (await client.callTool({
      name: DEFAULT_STATUS_TOOL,
      arguments: { ref },
    })) as CallToolResult;
    if (!idemCodeOf(last) || Date.now() >= until) return last;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export function refOf(result: CallToolResult): string {
  return (result.structuredContent as { idem: { ref: string } }).idem.ref;
}

export function summarize(result: CallToolResult): string {
  const code = idemCodeOf(result);
  if (code) return `${code} (ref ${refOf(result)})`;
  const isReplay = result._meta?.['io.idem/replayed'] === true;
  // A replay starts with Idem's note; what the tool said follows it.
  const own = isReplay ? result.content.slice(1) : result.content;
  const text = (own[0] as { text?: string } | undefined)?.text ?? '';
  return `${result.isError ? 'error: ' : ''}${text}${isReplay ? ' [stored result, replayed]' : ''}`;
}

export async function connect(url: string, fetch?: typeof globalThis.fetch): Promise<Client> {
  const client = new Client({ name: 'idem-demo-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {}));
  return client;
}
