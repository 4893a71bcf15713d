import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { type GatewayConfig, GatewayConfigSchema, loadConfig } from '../gateway/config/index.js';
import { withCommandUpstream } from './command-upstream.js';
import { commandUpstreamName, urlUpstreamName } from './upstream-name.js';

/** What `idem gateway` is given on its command line (commander's camelCase of each flag). */
export interface GatewayFlags {
  config?: string;
  readOnly?: string[];
  tool?: string[];
  listen?: string;
  port?: string;
  path?: string;
  stateless?: boolean;
  sse?: boolean;
  cors?: string[];
  apiKeyEnv?: string;
  apiKey?: string;
  tlsCert?: string;
  tlsKey?: string;
  header?: string[];
  stdio?: boolean;
  allowUnauthenticated?: boolean;
  logLevel?: string;
  logFormat?: string;
}

/** The actor a request with the front's API key acts as (`token:api-key`, docs/auth.md). */
export const API_KEY_ACTOR = 'api-key';

/**
 * The config the flags describe: --config's file, or one upstream after --, with the flags on top.
 * A flag sets its config key and wins over the file's value of it (as --log-level and --read-only
 * always did); each value is checked by that key's own schema, so a flag and its key accept the
 * same things. The one exception is auth: --api-key or --api-key-env beside a file's `auth:` is
 * refused, since replacing its tokens, or mixing them, silently would change who may call.
 */
export function buildConfig(command: string[], flags: GatewayFlags): GatewayConfig {
  let config: GatewayConfig;
  if (flags.config) {
    config = loadConfig(flags.config);
    // The command (or URL) after -- joins the config's upstreams: tune a zero-config server with a file.
    if (command.length > 0)
      config = withCommandUpstream(config, commandLineUpstream(command, flags.header ?? []));
    else if (flags.header)
      throw new ConfigError(
        '--header is for an HTTP upstream after --; in a config file, set upstreams.<name>.headers',
      );
  } else {
    config = GatewayConfigSchema.parse({ upstreams: commandLineUpstream(command, flags.header ?? []) });
  }
  const listen = listenAddress(flags);
  if (listen) {
    const http: Record<string, unknown> = { ...config.listen?.http, ...listen };
    config.listen = { ...config.listen, http: http as NonNullable<GatewayConfig['listen']>['http'] };
  }
  // With HTTP on, stdio is served only when asked for (here, or listen.stdio in the config).
  if (config.listen?.http) config.listen.stdio = flags.stdio ?? config.listen.stdio ?? false;
  else if (flags.stdio) config.listen = { ...config.listen, stdio: true };
  const http = httpFlags(flags);
  if (Object.keys(http).length > 0) {
    if (!config.listen?.http) {
      const given = Object.keys(http).map((key) => FLAG_OF_KEY[key] ?? key);
      throw new ConfigError(
        `${given.join(', ')} ${given.length > 1 ? 'are' : 'is'} for the HTTP front: give --listen or --port too (or listen.http in the config)`,
      );
    }
    Object.assign(config.listen.http, http);
  }
  // Said only when it changes something: a client config may carry it for a stdio-only gateway.
  if (flags.allowUnauthenticated && config.listen?.http) config.listen.http.allow_unauthenticated = true;
  if (config.listen) config.listen = checked(ListenSchema, config.listen, 'listen', listenFlagValues(flags));
  const apiKey = apiKeyAuth(flags);
  if (apiKey) {
    if (config.auth)
      throw new ConfigError(
        `${flags.apiKey !== undefined ? '--api-key' : '--api-key-env'}: the config has an auth: section already; put the key there (auth.bearer: [{ token_env: NAME, actor: ${API_KEY_ACTOR} }]) or drop one of the two`,
      );
    if (!config.listen?.http)
      throw new ConfigError(
        `${flags.apiKey !== undefined ? '--api-key' : '--api-key-env'} is for the HTTP front: give --listen or --port too (or listen.http in the config)`,
      );
    config.auth = checked(AuthSchema, apiKey, 'auth', {});
  }
  return config;
}

const ListenSchema = GatewayConfigSchema.shape.listen.unwrap();
const AuthSchema = GatewayConfigSchema.shape.auth.unwrap();

/** listen.http keys set by a flag of their own. */
const FLAG_OF_KEY: Record<string, string> = {
  path: '--path',
  stateless: '--stateless',
  sse: '--sse',
  allowed_origins: '--cors',
  tls: '--tls-cert/--tls-key',
};

/** --listen / --port → listen.http's host and port (the schema checks the port's range). */
function listenAddress(flags: GatewayFlags): { host: string; port: number } | undefined {
  if (flags.listen && flags.port) throw new ConfigError('give either --listen or --port, not both');
  const listen = flags.listen ?? (flags.port !== undefined ? `127.0.0.1:${flags.port}` : undefined);
  if (listen === undefined) return undefined;
  const match = /^(.*):(\d+)$/.exec(listen);
  if (!match)
    throw new ConfigError(
      flags.port !== undefined
        ? `--port ${flags.port}: expected a port number, e.g. 8787`
        : `--listen ${listen}: expected host:port, e.g. 127.0.0.1:8787`,
    );
  return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

/** The listen.http keys the front's flags set. */
function httpFlags(flags: GatewayFlags): Record<string, unknown> {
  const http: Record<string, unknown> = {};
  if (flags.path !== undefined) http.path = flags.path;
  if (flags.stateless) http.stateless = true;
  if (flags.sse) http.sse = true;
  if (flags.cors)
    http.allowed_origins = flags.cors
      .flatMap((value) => value.split(','))
      .map((origin) => origin.trim())
      .filter((origin) => origin !== '');
  if (flags.tlsCert !== undefined || flags.tlsKey !== undefined) {
    if (flags.tlsCert === undefined || flags.tlsKey === undefined)
      throw new ConfigError(
        `${flags.tlsCert === undefined ? '--tls-key needs --tls-cert' : '--tls-cert needs --tls-key'}: HTTPS takes a certificate and its private key`,
      );
    // Relative to where idem runs, as --config is.
    http.tls = { cert_file: resolve(flags.tlsCert), key_file: resolve(flags.tlsKey) };
  }
  return http;
}

/** What each listen.http key was given as on the command line, for the message when its schema refuses it. */
function listenFlagValues(flags: GatewayFlags): Record<string, string> {
  const given: Record<string, string> = {};
  if (flags.port !== undefined) given['http.port'] = `--port ${flags.port}`;
  else if (flags.listen !== undefined) {
    given['http.port'] = `--listen ${flags.listen}`;
    given['http.host'] = `--listen ${flags.listen}`;
  }
  if (flags.path !== undefined) given['http.path'] = `--path ${flags.path}`;
  if (flags.cors) given['http.allowed_origins'] = `--cors ${flags.cors.join(',')}`;
  if (flags.tlsCert !== undefined) given['http.tls'] = `--tls-cert ${flags.tlsCert}`;
  return given;
}

/** --api-key-env NAME or --api-key KEY → auth.bearer with one token, whose actor is `api-key`. */
function apiKeyAuth(flags: GatewayFlags): unknown {
  if (flags.apiKey !== undefined && flags.apiKeyEnv !== undefined)
    throw new ConfigError(
      'give either --api-key or --api-key-env, not both (--api-key-env keeps the key out of ps)',
    );
  if (flags.apiKeyEnv !== undefined)
    return { bearer: [{ token_env: flags.apiKeyEnv, actor: API_KEY_ACTOR }] };
  if (flags.apiKey === undefined) return undefined;
  // Clients send it as `Authorization: Bearer <key>`: what a bearer token may be (RFC 6750's b64token).
  if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(flags.apiKey))
    throw new ConfigError(
      '--api-key: a key clients can send as "Authorization: Bearer <key>": letters, digits and -._~+/ (then = padding)',
    );
  // Kept as its hash, as auth.bearer's token_sha256: the key itself is held nowhere in the gateway.
  const token_sha256 = createHash('sha256').update(flags.apiKey).digest('hex');
  return { bearer: [{ token_sha256, actor: API_KEY_ACTOR }] };
}

/** A section after the flags were laid on it, through its own schema; a refusal names the flag that set the key. */
function checked<T>(schema: z.ZodType<T>, value: unknown, section: string, given: Record<string, string>): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => {
    const key = issue.path.map(String).join('.');
    const flag = Object.entries(given).find(([k]) => key === k || key.startsWith(`${k}.`))?.[1];
    return `${flag ? `${flag}: ` : ''}${section}.${key}: ${issue.message}`;
  });
  throw new ConfigError(lines.join('; '));
}

/** The one upstream named after --: a Streamable HTTP server for a URL, else a stdio command. */
function commandLineUpstream(command: string[], headerFlags: string[]): GatewayConfig['upstreams'] {
  const [cmd, ...args] = command;
  if (!cmd)
    throw new ConfigError(
      'nothing to serve: give --config idem.yaml, or a command or URL after -- (idem gateway -- npx some-mcp-server, idem gateway -- https://host/mcp)',
    );
  if (/^https?:\/\//i.test(cmd)) {
    if (args.length > 0)
      throw new ConfigError(`after the URL ${cmd}: nothing else may follow (got ${args.join(' ')})`);
    let url: URL;
    try {
      url = new URL(cmd);
    } catch {
      throw new ConfigError(`${cmd} is not a valid URL`);
    }
    const headers = Object.fromEntries(headerFlags.map(parseHeaderFlag));
    return {
      [urlUpstreamName(url)]: { url: url.href, ...(headerFlags.length > 0 ? { headers } : {}) },
    };
  }
  if (headerFlags.length > 0)
    throw new ConfigError(
      '--header is for an HTTP upstream: give its URL after -- (idem gateway -H "Name: value" -- https://host/mcp)',
    );
  // Started by a client with its `env` block: what it inherits is its configuration, and names it.
  return { [commandUpstreamName(cmd, args)]: { command: cmd, args, identity_env: 'inherited' } };
}

/** `Name: value` (curl's form) → [name, value]. */
function parseHeaderFlag(flag: string): [string, string] {
  const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(.*)$/.exec(flag);
  if (!match)
    throw new ConfigError(
      `--header ${flag}: expected "Name: value", e.g. --header 'Authorization: Bearer \${API_TOKEN}'`,
    );
  return [match[1] as string, (match[2] as string).trim()];
}
