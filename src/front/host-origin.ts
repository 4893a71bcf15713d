/**
 * DNS-rebinding and cross-site protection shared by every HTTP listener of
 * Idem (the MCP front, the console, the metrics endpoint): the Host header
 * must name this server, and an Origin, when a browser sends one, must be
 * one of ours. One rule, one home.
 */

/** The Host values a listener on host:port answers to by default: its own address and loopback names. */
export function defaultAllowedHosts(host: string, port: number): string[] {
  const own = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return [...new Set([own, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`])];
}

/** Origins a page served from one of these hosts has (http and https). */
export function originsOf(hosts: Iterable<string>): string[] {
  return [...hosts].flatMap((h) => [`http://${h}`, `https://${h}`]);
}

/** Why a request is refused (403), or undefined when its Host and Origin are acceptable. */
export function hostOriginRefusal(
  headers: { host?: string | undefined; origin?: string | undefined },
  allowedHosts: ReadonlySet<string>,
  allowedOrigins: ReadonlySet<string>,
): string | undefined {
  if (!allowedHosts.has(headers.host ?? '')) return `Forbidden: Host "${headers.host ?? ''}" is not allowed`;
  if (headers.origin !== undefined && !allowedOrigins.has(headers.origin))
    return `Forbidden: Origin "${headers.origin}" is not allowed`;
  return undefined;
}
