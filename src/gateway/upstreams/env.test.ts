import { describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../config/config.js';
import { registerSecretVariables, upstreamEnvironment } from './env.js';

const environment = {
  PATH: '/usr/bin',
  GITHUB_TOKEN: 'ghp_client_gave_this',
  OTHER: 'x',
  IDEM_STORE_URL: 'postgres://idem:pw@db/idem',
  IDEM_DATA_DIR: '/var/lib/idem',
  IDEM_FINGERPRINT_KEY_FILE: '/etc/idem/key',
  GATEWAY_BEARER: 'bearer-secret',
  PG_PASSWORD: 'pg-secret',
  TICKETS_TOKEN: 'tickets-secret',
  BASH_FUNC_x: '() { echo hi; }',
  PAY_KEY: 'pay-secret-value',
  LEDGER_COPY: 'url://u:ledger-secret-value@host',
};

/** `${NAME}` as the config writes it. */
const ref = (name: string) => `${'$'}{${name}}`;

/** What the gateway read of its credentials at start: the ledger file's value. */
const HELD = ['ledger-secret-value'];

function configOf(upstream: Record<string, unknown>) {
  return GatewayConfigSchema.parse({
    store: { kind: 'postgres', url: `postgres://idem:${ref('PG_PASSWORD')}@db/idem` },
    auth: { bearer: [{ token_env: 'GATEWAY_BEARER', actor: 'agent' }] },
    credentials: { pay: { env: 'PAY_KEY' }, ledger: { file: '/etc/idem/ledger.key' } },
    upstreams: {
      server: { command: 'server', ...upstream },
      tickets: {
        url: 'https://tickets.example/mcp',
        headers: { Authorization: `Bearer ${ref('TICKETS_TOKEN')}`, 'X-Tenant': ref('OTHER_TENANT') },
      },
    },
  });
}

function environmentOf(upstream: Record<string, unknown>, secrets: readonly string[] = HELD) {
  const config = configOf(upstream);
  const spec = config.upstreams.server as Extract<(typeof config.upstreams)[string], { command: string }>;
  return upstreamEnvironment(config, spec, environment, secrets);
}

describe("a stdio upstream's environment", () => {
  it("inherits the gateway's environment by default, except Idem's own variables", () => {
    expect(environmentOf({})).toEqual({ PATH: '/usr/bin', GITHUB_TOKEN: 'ghp_client_gave_this', OTHER: 'x' });
  });

  it('env_inherit: none passes nothing (the SDK adds its safe few); a list passes only those names', () => {
    expect(environmentOf({ env_inherit: 'none' })).toEqual({});
    expect(environmentOf({ env_inherit: ['GITHUB_TOKEN', 'UNSET'] })).toEqual({
      GITHUB_TOKEN: 'ghp_client_gave_this',
    });
  });

  it("a list never passes one of Idem's own variables; env does, on purpose, and always applies on top", () => {
    expect(environmentOf({ env_inherit: ['IDEM_STORE_URL', 'GATEWAY_BEARER', 'OTHER'] })).toEqual({
      OTHER: 'x',
    });
    expect(
      environmentOf({ env_inherit: 'none', env: { IDEM_DATA_DIR: '/srv/upstream-idem', OTHER: 'y' } }),
    ).toEqual({ IDEM_DATA_DIR: '/srv/upstream-idem', OTHER: 'y' });
    expect(environmentOf({ env: { OTHER: 'y' } }).OTHER).toBe('y');
  });

  it("withholds a credential's variable, and any variable that carries a credential's value; env hands one over on purpose", () => {
    const inherited = environmentOf({});
    expect(inherited.PAY_KEY).toBeUndefined();
    expect(inherited.LEDGER_COPY).toBeUndefined();
    expect(environmentOf({ env_inherit: ['PAY_KEY'] })).toEqual({});
    expect(
      environmentOf({ env: { PAY_KEY: ref('PAY_KEY'), BOTH: `${ref('OTHER')}-${ref('UNSET')}` } }),
    ).toMatchObject({ PAY_KEY: 'pay-secret-value', BOTH: 'x-' });
  });

  it('registers for redaction the secrets the config takes from the environment: credentials, bearer tokens, secret headers', () => {
    const registered: string[] = [];
    registerSecretVariables(
      configOf({}),
      { add: (value) => registered.push(value) },
      {
        ...environment,
        OTHER_TENANT: 'tenant-of-the-upstream',
      },
    );
    expect(registered.sort()).toEqual(['bearer-secret', 'pay-secret-value', 'tickets-secret']);
  });

  it('rejects an env_inherit that is neither all, none nor a list of variable names', () => {
    for (const env_inherit of ['some', ['not a name'], 3])
      expect(() => environmentOf({ env_inherit })).toThrow();
  });
});
