/**
 * Raw HTTP to an MCP endpoint with full control over headers (Host and Origin
 * included): one request, the JSON-RPC messages of a reply, a raw session.
 */
import { request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * One HTTP request with exactly these headers (node:http, so Host and Origin
 * can be anything), resolving with the whole body.
 */
export function rawRequest(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    timeoutMs?: number;
  } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'POST',
        headers: options.headers ?? {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 60_000, () =>
      req.destroy(new Error(`no complete answer within ${options.timeoutMs ?? 60_000} ms`)),
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** JSON-RPC messages in a response body: one JSON document, or the `data:` lines of an SSE stream. */
export function messagesOf(response: RawResponse): Record<string, unknown>[] {
  const type = String(response.headers['content-type'] ?? '');
  if (type.includes('text/event-stream')) {
    return response.text
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
  }
  return response.text ? [JSON.parse(response.text) as Record<string, unknown>] : [];
}

export const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

/** A raw MCP session over HTTP: initialize, initialized, then `post` with the session headers. */
export async function rawSession(
  url: string,
  clientName: string,
  extraHeaders: Record<string, string> = {},
): Promise<{
  sessionId: string;
  headers: Record<string, string>;
  post(message: unknown, headers?: Record<string, string>): Promise<RawResponse>;
  call(message: { id: string | number } & Record<string, unknown>): Promise<Record<string, unknown>>;
}> {
  const init = await rawRequest(url, {
    headers: { ...MCP_HEADERS, ...extraHeaders },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: clientName, version: '1' },
      },
    }),
  });
  const sessionId = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof sessionId !== 'string')
    throw new Error(`initialize failed: ${init.status} ${init.text}`);
  const headers = {
    ...MCP_HEADERS,
    ...extraHeaders,
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-11-25',
  };
  const post = (message: unknown, more: Record<string, string> = {}) =>
    rawRequest(url, {
      headers: { ...headers, ...more },
      body: typeof message === 'string' ? message : JSON.stringify(message),
    });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    sessionId,
    headers,
    post,
    call: async (message) => {
      const response = await post({ jsonrpc: '2.0', ...message });
      const reply = messagesOf(response).find((m) => m.id === message.id);
      if (!reply)
        throw new Error(`no reply to ${JSON.stringify(message.id)}: ${response.status} ${response.text}`);
      return reply;
    },
  };
}
