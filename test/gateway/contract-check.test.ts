import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

afterAll(removeTemporaries);

const upstream = {
  command: process.execPath,
  args: [...fixtureArgs(join(import.meta.dirname, 'fixtures/annotated-server.ts'))],
  cwd: REPO_ROOT,
};

/** A contract that can never work: its approval would outlive the default 15-minute attach window. */
const unworkable = { replay: 'keyed', approval: 'every_call', approval_timeout: '1h' };

describe('contracts are checked before the gateway serves anything', () => {
  it('a contract that cannot work stops the start, naming the tool and the fix', async () => {
    const dataDir = freshDir('contract-check');
    const start = Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: dataDir,
        upstreams: { annotated: upstream },
        tools: { set_flag: unworkable, get_flag: { replay: 'read_only' } },
        defaults: { attach_window: '1m', approval_timeout: '2m' },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    await expect(start).rejects.toThrow(ConfigError);
    const message = await start.catch((error: Error) => error.message);
    expect(message).toContain('2 contracts cannot work');
    expect(message).toContain(
      'tools.set_flag: approval_timeout must not be longer than attach_window (1h > 15m, the default)',
    );
    expect(message).toContain('Set attach_window: 1h (or longer), or approval_timeout: 15m (or shorter)');
    expect(message).toContain('defaults: approval_timeout must not be longer than attach_window (2m > 1m)');
    expect(message).not.toContain('get_flag');
  });

  it('an action tool whose contract cannot work stops the start too', async () => {
    const start = Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('contract-check'),
        upstreams: { annotated: upstream },
        http_tools: {
          refund: {
            description: 'Refunds an order',
            method: 'POST',
            url: 'http://127.0.0.1:9/refund',
            contract: { replay: 'keyed', scope: { business_key: 'id' }, fingerprint: { ignore: ['id'] } },
          },
        },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    await expect(start).rejects.toThrow(
      /http_tools\.refund\.contract: scope\.business_key "id" is also in fingerprint\.ignore/,
    );
  });

  it('idem gateway exits with the message; idem lint reports the same', async () => {
    const dir = freshDir('contract-check-cli');
    const path = join(dir, 'idem.yaml');
    writeFileSync(
      path,
      JSON.stringify({
        upstreams: { annotated: upstream },
        // get_flag's upstream says readOnlyHint: true: under review, a finding of its own.
        tools: { set_flag: unworkable, get_flag: { replay: 'review' } },
      }),
    );
    const gateway = await runIdem(['gateway', '--config', path], { dataDir: dir, timeoutMs: 60_000 });
    expect(gateway.code).toBe(2);
    expect(gateway.stderr).toContain(
      'tools.set_flag: approval_timeout must not be longer than attach_window',
    );
    const lint = await runIdem(['lint', '--config', path, '--json'], { dataDir: dir });
    const findings = JSON.parse(lint.stdout) as { tool: string; message: string }[];
    expect(findings.find((f) => f.tool === 'tools.set_flag')?.message).toContain(
      'the gateway would refuse to start: tools.set_flag: approval_timeout',
    );
    // The other tools are still linted: the broken contract does not hide the upstream's tools.
    expect(findings.map((f) => f.tool)).toContain('get_flag');
    expect(lint.code).toBe(1);
  });
});
