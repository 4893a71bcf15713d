import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/**
 * A node:http handler serving MCP at /mcp without sessions: a server of its own for each request,
 * as the SDK's stateless example does (the probe's counting upstream, and a pass-through under
 * test). Anything else is 404; a request the server cannot take is 500.
 */
export function statelessMcp(
  serverFor: () => { connect(transport: Transport): Promise<void>; close(): Promise<void> },
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    const server = serverFor();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  };
}
