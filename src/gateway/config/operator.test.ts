import { describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from './config.js';
import { splitHostPort } from './operator.js';

const upstreams = { up: { command: 'node' } };

describe('console: and metrics: sections', () => {
  it('defaults: the console on 127.0.0.1:8788, metrics on 127.0.0.1:9464', () => {
    const config = GatewayConfigSchema.parse({ upstreams, console: {}, metrics: {} });
    expect(config.console).toEqual({ listen: '127.0.0.1:8788' });
    expect(config.metrics).toEqual({ listen: '127.0.0.1:9464' });
    expect(splitHostPort('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
  });

  it('refuses a listen address without a port, an unknown key, a bad variable name', () => {
    for (const section of [
      { console: { listen: 'localhost' } },
      { metrics: { listen: '127.0.0.1' } },
      { console: { token: 'in-the-file' } },
      { console: { token_env: 'not a name' } },
    ]) {
      expect(GatewayConfigSchema.safeParse({ upstreams, ...section }).success, JSON.stringify(section)).toBe(
        false,
      );
    }
  });
});
