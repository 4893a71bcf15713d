import { UPSTREAM_ENV_INHERIT } from '../../defaults.js';
import { MIN_REDACTED_SECRET_LENGTH } from '../../identity/redaction.js';
import type { GatewayConfig } from '../config/config.js';
import { envReferences, expandEnv } from '../config/env-references.js';

type StdioUpstreamConfig = Extract<GatewayConfig['upstreams'][string], { command: string }>;

/**
 * Variables that are Idem's own, never inherited by an upstream: every
 * IDEM_* (the store URL, data directory, key file, and any later one), the
 * bearer tokens of `auth.bearer[].token_env`, the variables `credentials:`
 * are read from (a credential goes only where a tool is configured to send
 * it), and whatever `${NAME}` the store URL or an upstream's headers take
 * from the environment (passwords, tokens for other upstreams).
 */
export function isIdemVariable(config: GatewayConfig): (name: string) => boolean {
  const own = new Set<string>(secretVariables(config, () => true));
  if (config.store?.kind === 'postgres') for (const name of envReferences(config.store.url)) own.add(name);
  return (name) => name.startsWith('IDEM_') || own.has(name);
}

/** A header that carries a secret by its name: its `${NAME}` values are scrubbed as credentials are. */
const SECRET_HEADER = /auth|token|key|secret|password|cookie|session/i;

/**
 * The variables of bearer tokens and credentials, the `${NAME}` of HTTP tools' fixed headers, and
 * those of upstream headers that `header` picks.
 */
function secretVariables(config: GatewayConfig, header: (name: string) => boolean): string[] {
  const names: string[] = [];
  for (const entry of config.auth?.bearer ?? []) if ('token_env' in entry) names.push(entry.token_env);
  for (const source of Object.values(config.credentials ?? {})) if ('env' in source) names.push(source.env);
  // An HTTP tool's fixed header takes from the environment what the file must not hold: a secret, whatever its name.
  for (const tool of Object.values(config.http_tools ?? {}))
    for (const value of Object.values(tool.fixed_headers ?? {})) names.push(...envReferences(value));
  for (const upstream of Object.values(config.upstreams)) {
    if (!('url' in upstream)) continue;
    for (const [name, value] of Object.entries(upstream.headers ?? {}))
      if (header(name)) names.push(...envReferences(value));
  }
  return names;
}

/**
 * Secrets the config takes from the environment besides credentials, registered for redaction at
 * start as credentials are: a token the gateway sends an HTTP upstream in a header named for one
 * (Authorization, X-Api-Key, …), which that upstream could echo back, and the bearer tokens of
 * clients. Other `${NAME}` values (a tenant, a host) are not secrets, and scrubbing them would
 * mangle results; a value too short to scrub is left alone.
 */
export function registerSecretVariables(
  config: GatewayConfig,
  secrets: { add(value: string): void },
  environment: NodeJS.ProcessEnv = process.env,
): void {
  for (const name of secretVariables(config, (header) => SECRET_HEADER.test(header))) {
    const value = environment[name];
    if (value !== undefined && value.length >= MIN_REDACTED_SECRET_LENGTH) secrets.add(value);
  }
}

/**
 * The environment a stdio upstream is started with (the MCP SDK adds its safe
 * few, HOME, PATH and the like, underneath). MCP clients hand servers their
 * API keys through the environment, so a wrapped server must get what its
 * client gave the gateway (docs/channels.md): by default everything except Idem's own
 * variables, and except any variable that holds a credential's value under
 * another name (`secrets`: the values Idem holds); `env_inherit` narrows that
 * (`none`, or a list of names), never widens it; the config's `env` applies on
 * top, its `${NAME}` taken from the environment, and is the way to hand an
 * upstream one of Idem's own variables on purpose.
 */
export function upstreamEnvironment(
  config: GatewayConfig,
  upstream: StdioUpstreamConfig,
  environment: NodeJS.ProcessEnv = process.env,
  secrets: readonly string[] = [],
): Record<string, string> {
  const inherit = upstream.env_inherit ?? UPSTREAM_ENV_INHERIT;
  const isOwn = isIdemVariable(config);
  const inherited: Record<string, string> = {};
  for (const [name, value] of Object.entries(environment)) {
    // Exported shell functions, which the SDK's own default leaves out as a risk too.
    if (value === undefined || value.startsWith('()')) continue;
    // A list narrows `all`: naming one of Idem's own variables does not pass it (give it in `env`).
    if (isOwn(name) || inherit === 'none') continue;
    if (secrets.some((secret) => value.includes(secret))) continue;
    if (inherit === 'all' || inherit.includes(name)) inherited[name] = value;
  }
  const given = Object.entries(upstream.env ?? {}).map(([name, value]) => [
    name,
    expandEnv(value, environment),
  ]);
  return { ...inherited, ...Object.fromEntries(given) };
}
