import { ConfigError } from '../errors.js';
import { type GatewayConfig, GatewayConfigSchema } from '../gateway/config/index.js';

/**
 * The config of `idem gateway --config FILE -- <command or URL>`: what is
 * after -- is one more upstream, named after what it runs (upstream-name.ts;
 * or the URL's host). A name the file already uses is refused, not renamed: the
 * visible tool names (and any `tools:` keys) depend on it.
 */
export function withCommandUpstream(config: GatewayConfig, added: GatewayConfig['upstreams']): GatewayConfig {
  for (const name of Object.keys(added)) {
    if (config.upstreams[name])
      throw new ConfigError(
        `the config already has an upstream named ${name}, and the command after -- would be named ${name} too: rename the config's, or add the command to the config's upstreams instead`,
      );
  }
  const parsed = GatewayConfigSchema.parse({ upstreams: added });
  return { ...config, upstreams: { ...config.upstreams, ...parsed.upstreams } };
}
