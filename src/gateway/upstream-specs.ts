import type { UpstreamSpec } from '../dispatch/mcp/index.js';
import type { Fingerprinter } from '../identity/fingerprint.js';
import { upstreamIdentity } from '../identity/upstream-identity.js';
import { expandEnv, type GatewayConfig } from './config.js';
import { upstreamEnvironment } from './upstream-env.js';

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
    const described = spec.identity === undefined ? upstream : { ...upstream, identity: spec.identity };
    return { ...upstream, server: upstreamIdentity(fingerprinter, described, { cwd: process.cwd() }) };
  });
}
