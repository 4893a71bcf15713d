/**
 * A deliberately low-level MCP client over Streamable HTTP for tests that
 * must control the exact JSON-RPC bytes (resend the same id, reuse an id with
 * other content) — things the SDK client never does on purpose.
 */
export class RawMcpHttp {
  sessionId: string | undefined;

  constructor(readonly url: string) {}

  async initialize(clientName = 'raw-test-client'): Promise<void> {
    await this.post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: clientName, version: '1.0.0' },
      },
    });
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** POSTs one message and returns the JSON-RPC messages of the reply (JSON or SSE). */
  async post(message: unknown): Promise<Record<string, unknown>[]> {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      },
      body: typeof message === 'string' ? message : JSON.stringify(message),
    });
    this.sessionId ??= res.headers.get('mcp-session-id') ?? undefined;
    const text = await res.text();
    if (res.headers.get('content-type')?.includes('text/event-stream')) {
      return text
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line.length > 6)
        .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    }
    return text ? [JSON.parse(text) as Record<string, unknown>] : [];
  }

  async callTool(id: string | number, name: string, args: unknown): Promise<Record<string, unknown>> {
    const replies = await this.post({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: args },
    });
    const reply = replies.find((m) => 'result' in m || 'error' in m);
    if (!reply) throw new Error(`no reply for ${JSON.stringify(id)}: ${JSON.stringify(replies)}`);
    return reply;
  }
}
