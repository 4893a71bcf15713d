import { envReferences, expandEnv, type GatewayConfig } from './config.js';

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
  const own = new Set<string>();
  for (const entry of config.auth?.bearer ?? []) if ('token_env' in entry) own.add(entry.token_env);
  for (const source of Object.values(config.credentials ?? {})) if ('env' in source) own.add(source.env);
  if (config.store?.kind === 'postgres') for (const name of envReferences(config.store.url)) own.add(name);
  for (const upstream of Object.values(config.upstreams)) {
    if (!('url' in upstream)) continue;
    for (const value of Object.values(upstream.headers ?? {}))
      for (const name of envReferences(value)) own.add(name);
  }
  return (name) => name.startsWith('IDEM_') || own.has(name);
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
  const inherit = upstream.env_inherit ?? 'all';
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
