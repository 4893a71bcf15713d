import type { Server } from './document.js';

/**
 * The base URL an operation's path is appended to: the configured `server:` override, else the
 * first of the operation's (or its path's, or the document's) servers, its variables at their
 * defaults. Undefined for a relative server URL (or none: OpenAPI's default is "/"), which only
 * the override can place on a host.
 */
export function baseUrlOf(
  servers: readonly Server[] | undefined,
  override: string | undefined,
): string | undefined {
  if (override) return override.replace(/\/+$/, '');
  const server = servers?.[0];
  if (!server) return undefined;
  const url = server.url.replace(
    /\{([^}]+)\}/g,
    (whole, name: string) => server.variables?.[name]?.default ?? whole,
  );
  if (!/^https?:\/\//i.test(url)) return undefined;
  return url.replace(/\/+$/, '');
}

/** The server URL as the document writes it, for a message. */
export function serverText(servers: readonly Server[] | undefined): string {
  return servers?.[0]?.url ?? '(none: OpenAPI defaults to "/")';
}
