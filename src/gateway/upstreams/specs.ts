import type { UpstreamSpec } from '../../dispatch/mcp/index.js';
import type { Fingerprinter } from '../../identity/fingerprint.js';
import { upstreamIdentity } from '../../identity/upstream-identity.js';
import type { GatewayConfig } from '../config/config.js';
import { expandEnv } from '../config/env-references.js';
import { upstreamEnvironment } from './env.js';

/**
 * The part of a stdio upstream's environment that says which server it is (`identity_env`):
 * what the config declares for it — `env`, and the inherited variables an `env_inherit` list
 * names — or, for the command after `idem gateway --` (whose environment is a client's `env`
 * block), everything it is given; serverRecord then leaves out the launch's own variables.
 */
function describingEnvironment(
  spec: Extract<GatewayConfig['upstreams'][string], { command: string }>,
  given: Record<string, string>,
): Record<string, string> {
  if (spec.identity_env === 'inherited') return given;
  const named = Array.isArray(spec.env_inherit) ? spec.env_inherit : [];
  const declared: Record<string, string> = {};
  for (const name of named) if (given[name] !== undefined) declared[name] = given[name];
  return { ...declared, ...spec.env };
}

/**
 * The upstreams of a config, with `${VAR}` in HTTP header values taken from
 * the environment, and each stdio upstream's environment as it inherits it.
 * Given the installation's fingerprinter (the gateway; `idem lint` needs none),
 * each also carries what it IS (`server`, identity/upstream-identity.ts),
 * computed once here from exactly what it is started or reached with.
 */
export function upstreamSpecsOf(
  config: GatewayConfig,
  fingerprinter?: Fingerprinter,
  /** The credential values the gateway holds: no variable that carries one is inherited. */
  secrets: readonly string[] = [],
): UpstreamSpec[] {
  return Object.entries(config.upstreams).map(([name, spec]) => {
    const upstream: UpstreamSpec =
      'url' in spec
        ? {
            name,
            url: spec.url,
            ...(spec.transport ? { transport: spec.transport } : {}),
            ...(spec.headers
              ? {
                  headers: Object.fromEntries(
                    Object.entries(spec.headers).map(([k, v]) => [k, expandEnv(v)]),
                  ),
                }
              : {}),
          }
        : {
            name,
            command: spec.command,
            ...(spec.args ? { args: spec.args } : {}),
            ...(spec.cwd ? { cwd: spec.cwd } : {}),
            env: upstreamEnvironment(config, spec, process.env, secrets),
          };
    if (!fingerprinter) return upstream;
    const described =
      spec.identity !== undefined
        ? { ...upstream, identity: spec.identity }
        : 'url' in spec || !('env' in upstream)
          ? upstream
          : { ...upstream, env: describingEnvironment(spec, upstream.env ?? {}) };
    return { ...upstream, server: upstreamIdentity(fingerprinter, described, { cwd: process.cwd() }) };
  });
}
