/**
 * `idem init -- <command>`: the real CLI (dist/) starts a real stdio server,
 * lists its tools and writes a commented config with a guessed contract per
 * tool; the file passes `idem lint` and serves with `idem gateway --config`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { idemCommand } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { plainExecutions } from './fixtures/plain-tools-server.js';

const SERVER = [
  process.execPath,
  ...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/plain-tools-server.ts')),
];

afterAll(removeTemporaries);

describe('idem init -- <command>', () => {
  it('writes a commented config with a guess per tool, which lint accepts and the gateway serves', async () => {
    const dir = freshDir('init');
    const counts = freshDir('init-counts');
    const output = join(dir, 'idem.yaml');
    const result = await runIdem(['init', '--output', output, '--', ...SERVER, '--dir', counts], {
      dataDir: dir,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`wrote ${output}: 3 tools`);

    const text = readFileSync(output, 'utf8');
    expect(text).toContain('create_note: { replay: review } # guess — confirm: its name says "create"');
    expect(text).toContain('get_time: { replay: read_only } # guess — confirm: its name starts with "get"');
    expect(text).toContain('# Creates a note.');
    // The published-annotations rule, said as the gateway and idem lint apply it: no line promises a hint.
    expect(text).toContain("any other is published readOnlyHint: false with the server's own idempotentHint");
    expect(text).not.toContain('idempotentHint: true');
    for (const line of text.split('\n').filter((l) => /^ {2}\S+: \{ replay/.test(l)))
      expect(line).toContain('# guess — confirm');
    const config = parse(text) as { upstreams: Record<string, { command: string; args: string[] }> };
    expect(config.upstreams['plain-tools-server']).toEqual({
      command: SERVER[0],
      args: [...SERVER.slice(1), '--dir', counts],
    });

    const lint = await runIdem(['lint', '--config', output], { dataDir: dir });
    expect(lint.stdout).toContain('OK');
    expect(lint.code).toBe(0);

    const cli = idemCommand(['gateway', '--config', output]);
    const client = new Client({ name: 'init-agent', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: cli.command,
        args: cli.args,
        cwd: cli.cwd,
        env: { ...process.env, IDEM_DATA_DIR: freshDir('init-data') } as Record<string, string>,
        stderr: 'ignore',
      }),
    );
    try {
      const call = (name: string, args: Record<string, unknown> = {}) =>
        client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
      expect(textOf(await call('get_time'))).toBe('time 1');
      expect(textOf(await call('get_time'))).toBe('time 2');
      await call('create_note', { text: 'x' });
      expect((await call('create_note', { text: 'x' }))._meta?.['io.idem/replayed']).toBe(true);
      expect(plainExecutions(counts, 'create_note')).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('refuses to overwrite a file without --force, before starting anything; --force overwrites', async () => {
    const dir = freshDir('init-force');
    const counts = freshDir('init-force-counts');
    const output = join(dir, 'idem.yaml');
    writeFileSync(output, 'mine\n');
    const refused = await runIdem(['init', '--output', output, '--', ...SERVER, '--dir', counts], {
      dataDir: dir,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${output} exists; give --force to overwrite it`);
    expect(readFileSync(output, 'utf8')).toBe('mine\n');
    expect(existsSync(join(counts, 'executions.log'))).toBe(false);

    const forced = await runIdem(['init', '--force', '--output', output, '--', ...SERVER, '--dir', counts], {
      dataDir: dir,
    });
    expect(forced.code).toBe(0);
    expect(readFileSync(output, 'utf8')).toContain('# guess — confirm');
  });
});
