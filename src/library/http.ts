import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { serveHttpFront } from '../front/http.js';
import type { HttpFrontOptions, ServedHttp } from '../front/http-options.js';
import { type Idem, insideOf } from './idem.js';

export type { ServedHttp } from '../front/http-options.js';

/**
 * Serves MCP over Streamable HTTP with sessions: one McpServer per session
 * (the SDK binds a server to one transport), one Idem for all of them, with
 * request receipts between each transport and its server. A 2026-07-28
 * request has no session: it gets a server of its own, receipts without
 * session scope, and `server/discover` answered through the server's own
 * `initialize`.
 */
export function serveStreamableHttp(
  idem: Idem,
  newServer: () => McpServer,
  options: Omit<HttpFrontOptions, 'wrap' | 'attach'> = {},
): Promise<ServedHttp> {
  const { wrap, modern } = insideOf(idem);
  return serveHttpFront({
    ...options,
    wrap: (transport) => wrap(transport),
    attach: async (transport) => {
      await newServer().connect(transport);
      return undefined;
    },
    modern: {
      wrap: (transport) => wrap(modern(transport), 'none'),
      attach: (transport) => newServer().connect(transport),
    },
  });
}
