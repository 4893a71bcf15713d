import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError } from '../../src/errors.js';
import { configJsonSchema, loadConfig } from '../../src/gateway/config/index.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { runIdem } from '../support/run-cli.js';

const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'idem-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const idem = (...args: string[]) => runIdem(args, { dataDir: dir });

describe('gateway config', () => {
  it('the published JSON Schema is the one the code validates with (npm run schema regenerates it)', () => {
    const published = JSON.parse(readFileSync(join(root, 'schema/idem-config.schema.json'), 'utf8'));
    expect(published).toEqual({ title: 'Idem gateway config', ...(configJsonSchema() as object) });
  });

  it('the annotated example loads, and validates against the published schema', () => {
    const config = loadConfig(join(root, 'examples/idem.yaml'));
    expect(Object.keys(config.upstreams)).toEqual(['payments', 'files']);
    expect(config.tools?.payments__charge_card?.replay).toBe('keyed');
    expect(config.data_dir).toBe(join(root, '.idem-data'));
    const ajv = new Ajv2020({ strict: false });
    const validate = ajv.compile(
      JSON.parse(readFileSync(join(root, 'schema/idem-config.schema.json'), 'utf8')),
    );
    expect(
      validate(parse(readFileSync(join(root, 'examples/idem.yaml'), 'utf8'))),
      JSON.stringify(validate.errors),
    ).toBe(true);
  });

  it('a wrong config is refused with every problem named', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(
      path,
      'upstreams:\n  "bad name!": { command: x }\ntools:\n  t: { replay: sometimes }\nlisten: { http: { port: 99999 } }\nsurprise: 1\n',
    );
    expect(() => loadConfig(path)).toThrow(ConfigError);
    try {
      loadConfig(path);
    } catch (error) {
      const message = (error as Error).message;
      for (const part of ['upstreams', 'tools.t.replay', 'listen.http.port', 'surprise'])
        expect(message).toContain(part);
    }
    writeFileSync(path, 'upstreams: {}\n');
    expect(() => loadConfig(path)).toThrow(
      /upstreams: nothing to serve: give at least one upstream, or an action tool/,
    );
  });

  it('a misspelt key is reported at its file, line and column, with the nearest valid key', () => {
    const path = join(dir, 'misspelt.yaml');
    writeFileSync(path, '# one upstream\nupstream:\n  plain: { command: x }\n');
    expect(() => loadConfig(path)).toThrow(`${path}:2:1: upstream: unknown key; did you mean upstreams?`);
    // The missing upstreams: is the same mistake, said once.
    expect(() => loadConfig(path)).not.toThrow(/upstreams: missing/);
    writeFileSync(path, 'upstreams:\n  plain:\n    comand: x\n');
    expect(() => loadConfig(path)).toThrow(
      `${path}:3:5: upstreams.plain.comand: unknown key; did you mean command?`,
    );
    writeFileSync(
      path,
      'upstreams: { u: { command: x } }\nstore: { kind: sqlite, pth: x }\ntools:\n  t: { replay: keyd }\n',
    );
    let message = '';
    try {
      loadConfig(path);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`${path}:2:24: store.pth: unknown key; did you mean path?`);
    expect(message).toContain(
      `${path}:4:16: tools.t.replay: "keyd" is not one of read_only, keyed, status, review; did you mean keyed?`,
    );
    writeFileSync(path, 'upstreams: { u: { command: x } }\nsurprise: 1\n');
    expect(() => loadConfig(path)).toThrow(
      /:2:1: surprise: unknown key; expected one of: data_dir, .*upstreams/,
    );
  });

  it('the OAuth example loads; several issuers need prefixed actors; auth needs bearer or oauth', () => {
    const example = join(root, 'examples/idem-oauth-keycloak.yaml');
    const config = loadConfig(example);
    expect(config.auth?.oauth).toMatchObject({
      resource: 'https://idem.example.com/mcp',
      actor: { claim: 'sub', prefix_issuer: false },
      jwks_cooldown: '30s',
    });
    const validate = new Ajv2020({ strict: false }).compile(
      JSON.parse(readFileSync(join(root, 'schema/idem-config.schema.json'), 'utf8')),
    );
    expect(validate(parse(readFileSync(example, 'utf8'))), JSON.stringify(validate.errors)).toBe(true);

    const path = join(dir, 'issuers.yaml');
    const issuers = '[{ issuer: "https://a.example" }, { issuer: "https://b.example" }]';
    writeFileSync(path, `upstreams: { u: { command: x } }\nauth: { oauth: { issuers: ${issuers} } }\n`);
    expect(() => loadConfig(path)).toThrow(/auth.oauth.actor.prefix_issuer: with several issuers/);
    writeFileSync(
      path,
      `upstreams: { u: { command: x } }\nauth: { oauth: { issuers: ${issuers}, actor: { prefix_issuer: true } } }\n`,
    );
    expect(loadConfig(path).auth?.oauth?.actor).toEqual({ claim: 'sub', prefix_issuer: true });
    writeFileSync(path, 'upstreams: { u: { command: x } }\nauth: {}\n');
    expect(() => loadConfig(path)).toThrow(/set auth.bearer, auth.oauth or both/);
    writeFileSync(
      path,
      'upstreams: { u: { command: x } }\nauth: { oauth: { issuers: [{ issuer: "https://a.example" }], algorithms: [HS256] } }\n',
    );
    expect(() => loadConfig(path)).toThrow(/auth.oauth.algorithms/);
  });
});

describe('idem lint', () => {
  const upstream = {
    command: process.execPath,
    args: [...fixtureArgs(join(import.meta.dirname, 'fixtures/annotated-server.ts'))],
    cwd: root,
  };

  it('reports an upstream hint a contract contradicts, once with the line that settles it, and contracts naming no tool; exit 1', async () => {
    const path = join(dir, 'lint.yaml');
    writeFileSync(
      path,
      JSON.stringify({
        upstreams: { annotated: upstream },
        tools: {
          send_email: { replay: 'review', after_completion: 'new' },
          get_flag: { replay: 'review' },
          no_such_tool: { replay: 'keyed' },
        },
      }),
    );
    const result = await idem('lint', '--config', path, '--json');
    const findings = JSON.parse(result.stdout) as { tool: string; message: string; settle?: string }[];
    const byTool = (t: string) =>
      findings
        .filter((f) => f.tool === t)
        .map((f) => f.message)
        .join(' | ');
    // The one published hint that differs from the upstream's own (docs/contracts.md, one rule).
    expect(findings.filter((f) => f.tool === 'get_flag')).toEqual([
      {
        tool: 'get_flag',
        message:
          'get_flag: the upstream says readOnlyHint: true, but the contract declares replay: review, so it is published readOnlyHint: false. If the upstream is right: tools: { get_flag: { replay: read_only } }',
        settle: 'tools: { get_flag: { replay: read_only } }',
      },
    ]);
    // Their own idempotentHint: true is published as it is, with or without a contract, after_completion: new included.
    expect(byTool('set_flag')).toBe('');
    expect(byTool('send_email')).toBe('');
    expect(byTool('no_such_tool')).toContain('no upstream offers');
    expect(byTool('delete_all')).toBe('');
    expect(result.code).toBe(1);
  });

  it('a config whose contracts contradict no annotation passes; exit 0', async () => {
    const path = join(dir, 'clean.yaml');
    writeFileSync(
      path,
      JSON.stringify({
        upstreams: { annotated: upstream },
        tools: {
          set_flag: { replay: 'keyed' },
          send_email: { replay: 'keyed', scope: { business_key: 'to' } },
          get_flag: { replay: 'read_only' },
        },
      }),
    );
    const result = await idem('lint', '--config', path);
    expect(result.stdout).toContain('OK');
    expect(result.code).toBe(0);
  });
});
