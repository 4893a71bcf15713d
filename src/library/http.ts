import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ReceiptTransport } from '../receipts/receipt-transport.js';
import type { Idem } from './idem.js';

export interface ServedHttp {
  url: string;
  close(): Promise<void>;
}

/** Largest request body accepted, as the SDK's own limit. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

interface Session {
  http: StreamableHTTPServerTransport;
  receipts: ReceiptTransport;
}

/**
 * Serves MCP over Streamable HTTP with sessions: one McpServer per session
 * (the SDK binds a server to one transport), one Idem for all of them, with
 * request receipts between each transport and its server.
 */
export async function serveStreamableHttp(
  idem: Idem,
  newServer: () => McpServer,
  options: { host?: string; port?: number; path?: string } = {},
): Promise<ServedHttp> {
  const path = options.path ?? '/mcp';
  const sessions = new Map<string, Session>();

  const openSession = async (): Promise<Session> => {
    const session = {} as Session;
    session.http = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
      },
    });
    session.receipts = idem.wrapTransport(session.http);
    await newServer().connect(session.receipts);
    const closed = session.receipts.onclose;
    session.receipts.onclose = () => {
      closed?.();
      if (session.http.sessionId) sessions.delete(session.http.sessionId);
    };
    return session;
  };

  const handle = async (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string' && !sessions.has(sessionId)) {
      sendJson(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return;
    }
    const session = typeof sessionId === 'string' ? sessions.get(sessionId) : await openSession();
    if (!session) return;
    if (req.method !== 'POST') {
      await session.http.handleRequest(req, res);
      return;
    }
    const body = await readJsonBody(req, res);
    if (body === undefined) return;
    if (!Array.isArray(body)) {
      const admission = session.receipts.admit(
        body as JSONRPCMessage,
        req.auth ? { authInfo: req.auth } : undefined,
      );
      if (admission.kind === 'answer') {
        // A resend (or a refused id) is answered from its receipt, so it never
        // displaces the stream the first request is still waiting on.
        sendJson(res, 200, await admission.reply, session.http.sessionId);
        return;
      }
    }
    await session.http.handleRequest(req, res, body);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, { jsonrpc: '2.0', error: { code: -32603, message: String(error) }, id: null });
      else res.end();
    });
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}${path}`,
    close: async () => {
      for (const session of sessions.values()) await session.receipts.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, sessionId?: string): void {
  res
    .writeHead(status, {
      'content-type': 'application/json',
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    })
    .end(JSON.stringify(body));
}

/** Reads and parses the body; on a bad body answers with the JSON-RPC error itself and returns undefined. */
async function readJsonBody(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      sendJson(res, 413, {
        jsonrpc: '2.0',
        error: { code: -32600, message: `Request body larger than ${MAX_BODY_BYTES} bytes` },
        id: null,
      });
      req.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    sendJson(res, 400, {
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error: the body is not valid JSON' },
      id: null,
    });
    return undefined;
  }
}
