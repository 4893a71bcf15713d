import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { durationMs } from '../../contracts/duration.js';
import { ConfigError, messageOf } from '../../errors.js';
import type { Log } from '../../support/log.js';
import type { GatewayConfig } from './config.js';
import { isLoopbackHost, unauthenticatedExposure } from './exposure.js';
import { sessionBoundsOf } from './session-bounds.js';

/**
 * Where and how the HTTP front listens, from `listen.http`, checked before it
 * opens: OAuth off loopback needs `auth.oauth.resource`; without auth it warns
 * (the actor is whatever the client says it is), and refuses a non-loopback
 * address unless `listen.http.allow_unauthenticated` is set.
 */
export function httpListenOf(config: GatewayConfig, authenticated: boolean, log: Log | undefined) {
  const http = config.listen?.http;
  const stateless = http?.stateless ?? false;
  const sse = http?.sse ?? false;
  if (sse && stateless)
    throw new ConfigError(
      'listen.http.sse serves sessions (each lives as long as its event stream): it cannot be combined with listen.http.stateless (--stateless)',
    );
  const host = http?.host ?? '127.0.0.1';
  if (config.auth?.oauth && !config.auth.oauth.resource && !isLoopbackHost(host)) {
    // The front's own address is not what clients reach from elsewhere (a proxy, a DNS name).
    throw new ConfigError(
      `auth.oauth.resource is required when listening on ${host}: set it to the URL clients use to reach the gateway (tokens name it as their audience).`,
    );
  }
  if (!authenticated) {
    const exposure = unauthenticatedExposure({
      host,
      stateless,
      allowed: http?.allow_unauthenticated ?? false,
    });
    if (exposure.refuse) throw new ConfigError(exposure.message);
    // Said even without a logger: an operator must not miss it.
    if (log) log.warn(exposure.message);
    else process.stderr.write(`idem gateway: warn: ${exposure.message}\n`);
  }
  const timeout = (key: 'headers' | 'request' | 'idle') => {
    const value = http?.timeouts?.[key];
    return value === undefined ? undefined : durationMs(value, `listen.http.timeouts.${key}`);
  };
  const timeouts = Object.fromEntries(
    (
      [
        ['headersMs', timeout('headers')],
        ['requestMs', timeout('request')],
        ['idleMs', timeout('idle')],
      ] as const
    ).filter(([, ms]) => ms !== undefined),
  );
  return {
    host,
    timeouts,
    ...(http?.tls ? { tls: tlsFiles(http.tls) } : {}),
    port: http?.port ?? 8787,
    path: http?.path ?? '/mcp',
    stateless,
    sse,
    ...sessionBoundsOf(http),
    ...(http?.allowed_hosts ? { allowedHosts: http.allowed_hosts } : {}),
    ...(http?.allowed_origins ? { allowedOrigins: http.allowed_origins } : {}),
  };
}

/** The certificate and key of listen.http.tls, read before the front opens: a file it cannot read stops the start. */
function tlsFiles(tls: { cert_file: string; key_file: string }): { cert: Buffer; key: Buffer } {
  const read = (file: string, key: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new ConfigError(`listen.http.tls.${key} (${file}): ${messageOf(error)}`);
    }
  };
  const files = { cert: read(tls.cert_file, 'cert_file'), key: read(tls.key_file, 'key_file') };
  try {
    createSecureContext(files);
  } catch (error) {
    throw new ConfigError(
      `listen.http.tls: ${tls.cert_file} and ${tls.key_file} are not a PEM certificate and its key: ${messageOf(error)}`,
    );
  }
  return files;
}
