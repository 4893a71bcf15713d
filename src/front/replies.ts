import type { ServerResponse } from 'node:http';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC error message; `id` null only when the request's own id cannot be read. */
export function rpcError(code: number, message: string, id: RequestId | null = null, data?: unknown) {
  return { jsonrpc: '2.0', error: { code, message, ...(data === undefined ? {} : { data }) }, id };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, sessionId?: string): void {
  res
    .writeHead(status, {
      'content-type': 'application/json',
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    })
    .end(JSON.stringify(body));
}
