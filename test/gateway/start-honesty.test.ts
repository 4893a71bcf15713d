/**
 * What the gateway says when what it was given cannot work (issue 46, items 3, 4, 5 and 7): a
 * command-line tool name that matches nothing is held to the config's rule, "did you mean"
 * included; a config typo found when the first client lists reaches that client at once and
 * leaves the HTTP gateway up and not ready; /readyz is not ready while an upstream's command
 * does not exist; an upstream that exits is logged with its exit code. The CLI as its own
 * process over loopback and stdio.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { stdioIdemClient, stopChild } from '../support/gateway-process.js';
import { idemCommand } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { MCP_HEADERS, rawRequest, rawSession } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

const PLAIN_SERVER = [
  process.execPath,
  ...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/plain-tools-server.ts')),
];

const children: ChildProcess[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});
afterAll(async () => {
  for (const child of children) await stopChild(child, 'SIGKILL');
  removeTemporaries();
});

/** `idem gateway <args>` serving HTTP; resolves once it says where, with its stderr so far and its exit. */
async function httpGateway(args: string[]) {
  const cli = idemCommand(['gateway', ...args]);
  const child = spawn(cli.command, cli.args, {
    cwd: cli.cwd,
    env: { ...process.env, IDEM_DATA_DIR: freshDir('honesty-data') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await vi.waitFor(() => {
    if (child.exitCode !== null) throw new Error(`idem gateway exited with ${child.exitCode}:\n${stderr}`);
    const match = /Streamable HTTP on (http:\S+)/.exec(stderr);
    if (!match) throw new Error('not listening yet');
    return match[1] as string;
  }, PATIENTLY);
  const readyz = async () => {
    const answer = await rawRequest(new URL('/readyz', url).href, { method: 'GET' });
    return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
  };
  return { url, child, readyz, stderr: () => stderr };
}

/** `idem gateway <flags> -- <plain tools server>` over stdio, as a desktop client runs it. */
async function stdioGateway(flags: string[]) {
  const { client, transport, stderr } = await stdioIdemClient(
    ['gateway', ...flags, '--', ...PLAIN_SERVER, '--dir', freshDir('honesty-counts')],
    {
      name: 'honesty-agent',
      env: { ...process.env, IDEM_DATA_DIR: freshDir('honesty-data') } as Record<string, string>,
    },
  );
  clients.push(client);
  const exitCode = new Promise<number | null>((resolve) => {
    const pid = transport.pid;
    const child = (transport as unknown as { _process?: ChildProcess })._process;
    if (!child || pid === null) resolve(null);
    else child.once('exit', (code) => resolve(code));
  });
  return { client, exitCode, stderr };
}

describe('a tool named on the command line is held to the config’s rule', () => {
  it('--tool with a misspelt name stops the gateway at the first listing, saying the nearest name; exit 2', async () => {
    const { client, exitCode, stderr } = await stdioGateway(['--tool', 'creat_note=review']);
    await expect(client.listTools()).rejects.toThrow(
      /--tool creat_note=review: no published tool matches "creat_note"; did you mean create_note\?/,
    );
    expect(await exitCode).toBe(2);
    expect(stderr()).toContain('did you mean create_note?');
  });

  it('a --read-only glob that matches nothing: the same, with the nearest glob', async () => {
    const { client, exitCode } = await stdioGateway(['--read-only', 'get_*,lsit_*']);
    await expect(client.listTools()).rejects.toThrow(
      /--read-only lsit_\*: no published tool matches "lsit_\*"; did you mean list_\*\?/,
    );
    expect(await exitCode).toBe(2);
  });

  it('patterns that match are served as before', async () => {
    const { client } = await stdioGateway(['--read-only', 'get_*,list_*', '--tool', 'create_note=review']);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['create_note', 'get_time', 'list_notes']),
    );
  });
});

describe('a config tool name found wrong at the first listing, on the HTTP front', () => {
  it('the client that listed gets the error at once; the gateway stays up, not ready, and says so to every client', async () => {
    const dir = freshDir('honesty-typo');
    const path = join(dir, 'idem.json');
    writeFileSync(
      path,
      JSON.stringify({
        upstreams: { pay: countingUpstream(dir) },
        tools: { cuont: { replay: 'keyed', scope: { business_key: 'key' } } },
      }),
    );
    const gateway = await httpGateway(['--config', path, '--port', '0']);
    expect((await gateway.readyz()).status).toBe(200);
    for (const name of ['first', 'second']) {
      const session = await rawSession(gateway.url, name);
      // Well under the client's own 60 s request timeout: an answer, not a wait.
      const list = await session.call({ id: 1, method: 'tools/list' });
      expect(list.error).toMatchObject({
        code: -32603,
        message: expect.stringContaining('tools.cuont: no published tool is named "cuont"'),
      });
      expect((list.error as { message: string }).message).toContain('did you mean count?');
    }
    expect(gateway.child.exitCode).toBeNull();
    expect(await gateway.readyz()).toMatchObject({ status: 503, body: { ready: false, config: 'invalid' } });
    expect(gateway.stderr()).toContain('tools.cuont: no published tool is named "cuont"');
    expect(gateway.stderr()).toContain('the HTTP front stays up');
  });
});

describe('/readyz and an upstream that cannot start', () => {
  it('a command that does not exist: not ready from the start, said in the log at start', async () => {
    const gateway = await httpGateway(['--port', '0', '--', 'idem-no-such-server-xyz', '--flag']);
    expect(await gateway.readyz()).toMatchObject({
      status: 503,
      body: { ready: false, upstreams: { configured: 1, down: 1 } },
    });
    expect(gateway.stderr()).toContain(
      'upstream idem-no-such-server-xyz cannot be started: its command idem-no-such-server-xyz is not on its PATH',
    );
    // A client is told at once, as before.
    const refused = await rawRequest(gateway.url, {
      headers: MCP_HEADERS,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      }),
      timeoutMs: 15_000,
    });
    expect(refused.text).toContain('ENOENT');
  });
});

describe('an upstream that exits', () => {
  it('is logged with its exit code, not as the write that found it gone (EPIPE)', async () => {
    // Reads initialize, closes its stdin (fd 0, no stream of Node's on it), answers, and exits 4 a moment
    // later: the gateway's next write finds no reader (EPIPE) before the exit is known.
    const script = `
      const fs = require('node:fs');
      const buffer = Buffer.alloc(65536);
      const read = fs.readSync(0, buffer);
      const id = JSON.parse(buffer.subarray(0, read).toString().split('\\n')[0]).id;
      fs.closeSync(0);
      const serverInfo = { name: 'quitter', version: '1' };
      process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo } }) + '\\n');
      setTimeout(() => process.exit(4), 300);`;
    const gateway = await httpGateway(['--port', '0', '--', process.execPath, '-e', script]);
    await rawSession(gateway.url, 'c').catch(() => {});
    await vi.waitFor(() => expect(gateway.stderr()).toMatch(/upstream \S+ .*exited with code 4/), PATIENTLY);
    expect(gateway.stderr()).not.toMatch(/(could not be started|went down|went away): write EPIPE;/);
  });
});
