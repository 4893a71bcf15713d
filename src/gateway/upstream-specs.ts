import type { UpstreamSpec } from '../dispatch/mcp/index.js';
import { expandEnv, type GatewayConfig } from './config.js';
import { upstreamEnvironment } from './upstream-env.js';

/**
 * The upstreams of a config, with `${VAR}` in HTTP header values taken from
 * the environment, and each stdio upstream's environment as it inherits it.
 */
export function upstreamSpecsOf(config: GatewayConfig): UpstreamSpec[] {
  return Object.entries(config.upstreams).map(([name, spec]) =>
    'url' in spec
      ? {
          name,
          url: spec.url,
          ...(spec.headers
            ? {
                headers: Object.fromEntries(Object.entries(spec.headers).map(([k, v]) => [k, expandEnv(v)])),
              }
            : {}),
        }
      : {
          name,
          command: spec.command,
          ...(spec.args ? { args: spec.args } : {}),
          ...(spec.cwd ? { cwd: spec.cwd } : {}),
          env: upstreamEnvironment(config, spec),
        },
  );
}
