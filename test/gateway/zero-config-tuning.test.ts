/**
 * Tuning zero-config use without writing a contract per tool: `--read-only`
 * globs, `--tool NAME=replay`, and `--config FILE` beside `-- <command>`.
 * The real CLI (dist/) in front of a real stdio server that annotates nothing
 * (fixtures/plain-tools-server.ts), which counts what arrives.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { stdioIdemClient } from '../support/gateway-process.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { plainExecutions } from './fixtures/plain-tools-server.js';

const SERVER = [
  process.execPath,
  ...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/plain-tools-server.ts')),
];

const open: Client[] = [];
afterEach(async () => {
  for (const client of open.splice(0)) await client.close().catch(() => {});
});
afterAll(removeTemporaries);

/** `idem gateway <flags> -- <the plain server>` on stdio, as an MCP client config runs it. */
async function gateway(flags: string[], counts: string) {
  const { client, stderr } = await stdioIdemClient(['gateway', ...flags, '--', ...SERVER, '--dir', counts], {
    name: 'tuning-agent',
    env: { ...process.env, IDEM_DATA_DIR: freshDir('tuning-data') } as Record<string, string>,
  });
  open.push(client);
  const call = (name: string, args: Record<string, unknown> = {}) =>
    client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  return { client, call, stderr };
}

describe('idem gateway --read-only / --tool -- <command>', () => {
  it('a tool named read-only by a glob runs every time; a tool left on review is still replayed', async () => {
    const counts = freshDir('tuning-counts');
    const { call } = await gateway(['--read-only', 'get_*', '--read-only', 'list_*'], counts);
    expect(textOf(await call('get_time'))).toBe('time 1');
    expect(textOf(await call('get_time'))).toBe('time 2');
    expect(textOf(await call('list_notes'))).toBe('notes 1');
    expect(textOf(await call('list_notes'))).toBe('notes 2');
    expect(plainExecutions(counts, 'get_time')).toBe(2);

    const note = await call('create_note', { text: 'hi' });
    const again = await call('create_note', { text: 'hi' });
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(again.content.at(-1)).toEqual(note.content[0]);
    expect(plainExecutions(counts, 'create_note')).toBe(1);
  });

  it('--tool NAME=replay sets one tool and wins over --read-only', async () => {
    const counts = freshDir('tuning-counts');
    const { call } = await gateway(['--read-only', '*', '--tool', 'create_note=review'], counts);
    await call('get_time');
    await call('get_time');
    expect(plainExecutions(counts, 'get_time')).toBe(2);
    await call('create_note', { text: 'hi' });
    expect((await call('create_note', { text: 'hi' }))._meta?.['io.idem/replayed']).toBe(true);
    expect(plainExecutions(counts, 'create_note')).toBe(1);
  });

  it('refuses a --tool it cannot read, saying what it expects', async () => {
    const dir = freshDir('tuning-bad');
    const result = await runIdem(['gateway', '--tool', 'get_time=cached', '--', ...SERVER, '--dir', dir], {
      dataDir: dir,
      timeoutMs: 30_000,
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('--tool get_time=cached: expected NAME=read_only|review|keyed|status');
  });
});

describe('idem gateway --config FILE -- <command>', () => {
  it('adds the command as an upstream named after its basename; the file’s contracts apply, and flags win over them', async () => {
    const counts = freshDir('tuning-counts');
    const config = join(freshDir('tuning-config'), 'idem.yaml');
    // Two upstreams once the command joins: visible names are prefixed with the upstream's name.
    writeFileSync(
      config,
      [
        'upstreams:',
        '  other:',
        `    command: ${JSON.stringify(SERVER[0])}`,
        `    args: ${JSON.stringify([...SERVER.slice(1), '--dir', freshDir('tuning-other')])}`,
        'tools:',
        '  plain-tools-server__get_time: { replay: read_only }',
        '  plain-tools-server__list_notes: { replay: read_only }',
        '',
      ].join('\n'),
    );
    const { client, call } = await gateway(
      ['--config', config, '--tool', 'plain-tools-server__list_notes=review'],
      counts,
    );
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['plain-tools-server__get_time', 'other__get_time']));
    await call('plain-tools-server__get_time');
    await call('plain-tools-server__get_time');
    expect(plainExecutions(counts, 'get_time')).toBe(2);
    await call('plain-tools-server__list_notes');
    expect((await call('plain-tools-server__list_notes'))._meta?.['io.idem/replayed']).toBe(true);
    expect(plainExecutions(counts, 'list_notes')).toBe(1);
  });
});
