import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as it reached the far side. */
export interface ArrivedRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: IncomingMessage['headers'];
  /** The body parsed as JSON, or undefined when none was sent. */
  body: unknown;
}

export interface Answer {
  status: number;
  body?: unknown;
}

/**
 * A loopback server standing in for an API's host: it records every request, in order, and
 * answers with `respond` (which may wait: a test holds the target, then lets it go).
 */
export async function countingTarget(respond: (request: ArrivedRequest) => Answer | Promise<Answer>) {
  const requests: ArrivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const request: ArrivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(request);
      const answer = await respond(request);
      if (res.destroyed) return;
      res.writeHead(answer.status, answer.body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(answer.body === undefined ? undefined : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    requests,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
