/**
 * CORS for browser-based MCP clients on the origins the operator listed
 * (`listen.http.allowed_origins`). The rules are hono/cors's, run on a
 * request that carries only what CORS looks at (method, Origin, the preflight's
 * requested headers): the front itself is plain node:http.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono } from 'hono';
import { cors } from 'hono/cors';

/**
 * What a browser client may send: the MCP headers the front reads (session,
 * revision, resumption, the 2026-07-28 request headers) and the token.
 */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'Last-Event-ID',
  'Mcp-Method',
  'Mcp-Name',
];

/**
 * What its script may read: the session id it must send back, the revision,
 * the auth challenge (it names the resource metadata), when to retry a 503.
 */
export const CORS_EXPOSED_HEADERS = [
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'WWW-Authenticate',
  'Retry-After',
];

/** Applies CORS to one request: true when it was a preflight, answered here (204). */
export type Cors = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

export function corsFor(allowedOrigins: readonly string[]): Cors {
  const app = new Hono();
  app.use(
    cors({
      origin: [...allowedOrigins],
      allowMethods: ['GET', 'POST', 'DELETE'],
      allowHeaders: CORS_ALLOWED_HEADERS,
      exposeHeaders: CORS_EXPOSED_HEADERS,
      // Bearer tokens travel in a header, not in cookies: no credentialed requests.
      credentials: false,
      maxAge: 600,
    }),
  );
  app.all('*', (c) => c.body(null, 204));
  return async (req, res) => {
    const origin = req.headers.origin;
    const preflight = req.method === 'OPTIONS';
    if (origin === undefined) return false;
    const requested = req.headers['access-control-request-headers'];
    const answer = await app.fetch(
      new Request('http://front/', {
        method: preflight ? 'OPTIONS' : 'GET',
        headers: {
          origin,
          ...(typeof requested === 'string' ? { 'access-control-request-headers': requested } : {}),
        },
      }),
    );
    const headers = [...answer.headers].filter(
      ([name]) => name.startsWith('access-control-') || name === 'vary',
    );
    if (!preflight) {
      for (const [name, value] of headers) res.setHeader(name, value);
      res.appendHeader('vary', 'Origin');
      return false;
    }
    res.writeHead(204, Object.fromEntries(headers)).end();
    return true;
  };
}
