import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Fingerprinter } from '../../identity/fingerprint.js';
import { upstreamIdentity } from '../../identity/upstream-identity.js';
import { GatewayConfigSchema } from '../config/config.js';
import { upstreamSpecsOf } from './specs.js';

const fingerprinter = new Fingerprinter(randomBytes(32));
const serverOf = (upstreams: Record<string, unknown>) =>
  Object.fromEntries(
    upstreamSpecsOf(GatewayConfigSchema.parse({ upstreams }), fingerprinter).map((spec) => [
      spec.name,
      spec.server,
    ]),
  );

describe('upstreamSpecsOf: each upstream with what it is', () => {
  it('gives two servers one interpreter starts two identities, and one server under two names one', () => {
    const memory = (path: string) => ({
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-memory'],
      env: { MEMORY_FILE_PATH: path },
    });
    const servers = serverOf({
      a: memory('/srv/a.json'),
      b: memory('/srv/b.json'),
      again: memory('/srv/a.json'),
    });
    expect(servers.a).toMatch(/^srv_/);
    expect(servers.b).not.toBe(servers.a);
    expect(servers.again).toBe(servers.a);
  });

  it('from a config file, digests what the config declares of its environment; what it merely inherits does not count', () => {
    // Two gateways of a fleet, one config file, hosts that set different variables: the same server.
    const up = { command: 'server-x' };
    const listed = { command: 'server-x', env_inherit: ['SPECS_TEST_TOKEN'] };
    try {
      process.env.SPECS_TEST_TOKEN = 'one';
      process.env.SPECS_TEST_HOST = 'host-a';
      const before = serverOf({ up, listed });
      process.env.SPECS_TEST_HOST = 'host-b';
      expect(serverOf({ up, listed })).toEqual(before);
      // A variable the config names is declared: its value is part of the server.
      process.env.SPECS_TEST_TOKEN = 'two';
      const after = serverOf({ up, listed });
      expect(after.up).toBe(before.up);
      expect(after.listed).not.toBe(before.listed);
      expect(serverOf({ up: { ...up, env: { API_TOKEN: 'b' } } }).up).not.toBe(after.up);
    } finally {
      delete process.env.SPECS_TEST_TOKEN;
      delete process.env.SPECS_TEST_HOST;
    }
  });

  it('identity_env: inherited (idem gateway -- <command>): the environment it is given counts, the launch and Idem left out', () => {
    const up = { command: 'server-x', identity_env: 'inherited' };
    const narrowed = { command: 'server-x', identity_env: 'inherited', env_inherit: ['PATH'] };
    try {
      process.env.SPECS_TEST_TOKEN = 'one';
      process.env.IDEM_SPECS_TEST = 'one';
      const before = serverOf({ up, narrowed });
      process.env.SPECS_TEST_TOKEN = 'two';
      const after = serverOf({ up, narrowed });
      expect(after.up).not.toBe(before.up);
      expect(after.narrowed).toBe(before.narrowed);
      // Idem's own variables are never passed to an upstream: not part of what it is either.
      process.env.IDEM_SPECS_TEST = 'two';
      expect(serverOf({ up }).up).toBe(after.up);
      // A variable of the launch (an editor's, a terminal's) changes at every start: left out.
      process.env.VSCODE_PID = String(process.pid);
      expect(serverOf({ up }).up).toBe(after.up);
    } finally {
      delete process.env.SPECS_TEST_TOKEN;
      delete process.env.IDEM_SPECS_TEST;
      delete process.env.VSCODE_PID;
    }
  });

  it("takes the operator's identity: alone, for a command and a URL", () => {
    const servers = serverOf({
      old: { command: 'node', args: ['/opt/v1/server.mjs'], identity: 'billing' },
      moved: { url: 'https://billing.internal/mcp', identity: 'billing' },
    });
    expect(servers.old).toBe(servers.moved);
    expect(servers.old).toBe(
      upstreamIdentity(fingerprinter, { identity: 'billing', url: 'x:' }, { cwd: '/' }),
    );
  });

  it('computes nothing without a fingerprinter (idem lint)', () => {
    const [spec] = upstreamSpecsOf(GatewayConfigSchema.parse({ upstreams: { up: { command: 'server-x' } } }));
    expect(spec && 'server' in spec).toBe(false);
  });
});
