import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { defaultAllowedHosts, hostOriginRefusal, originsOf } from '../front/host-origin.js';

export interface ServedMetrics {
  url: string;
  close(): Promise<void>;
}

/**
 * `GET /metrics` in the Prometheus text format, on its own listener (the
 * gateway's `metrics:` section): the same for a stdio gateway, which has no
 * HTTP front, and an HTTP one, whose front answers agents with their own auth.
 * No auth of its own — it names tools and counts, never arguments or secrets —
 * but the Host/Origin rule of every Idem listener.
 */
export async function serveMetrics(registry: Registry, host: string, port: number): Promise<ServedMetrics> {
  let hosts = new Set<string>();
  let origins = new Set<string>();
  const server: Server = createServer((req, res) => {
    const refusal = hostOriginRefusal(req.headers, hosts, origins);
    if (refusal) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`${refusal}\n`);
      return;
    }
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  hosts = new Set(defaultAllowedHosts(host, bound));
  origins = new Set(originsOf(hosts));
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
