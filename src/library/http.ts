import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type HttpFrontOptions, type ServedHttp, serveHttpFront } from '../front/http.js';
import type { Idem } from './idem.js';

export type { ServedHttp } from '../front/http.js';

/**
 * Serves MCP over Streamable HTTP with sessions: one McpServer per session
 * (the SDK binds a server to one transport), one Idem for all of them, with
 * request receipts between each transport and its server.
 */
export function serveStreamableHttp(
  idem: Idem,
  newServer: () => McpServer,
  options: Omit<HttpFrontOptions, 'wrap' | 'attach'> = {},
): Promise<ServedHttp> {
  return serveHttpFront({
    ...options,
    wrap: (transport) => idem.wrapTransport(transport),
    attach: (transport) => newServer().connect(transport),
  });
}
