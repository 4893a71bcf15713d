/**
 * `idem console --listen` as an operator runs it (the compiled CLI, its own
 * process): on an address other machines can reach it says at start that it
 * speaks plain HTTP. Traffic goes to 127.0.0.1 only, which a 0.0.0.0 listener
 * also answers.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { idemCommand } from '../support/idem-cli.js';

const TOKEN = 'listen-test-token-0123456789abcdef';
const work = mkdtempSync(join(tmpdir(), 'idem-console-listen-'));
const children: ChildProcess[] = [];

beforeAll(async () => {
  // An operator command opens an existing store; a gateway would have made it.
  await (await openStore({ kind: 'sqlite', path: join(work, 'idem.db') })).close();
});

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  }
  rmSync(work, { recursive: true, force: true });
});

/** Starts `idem console --listen <listen>`; resolves with its port and stderr up to the start line. */
function startConsole(listen: string): Promise<{ port: number; stderr: () => string }> {
  const { command, args, cwd } = idemCommand(['console', '--db', join(work, 'idem.db'), '--listen', listen]);
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, IDEM_CONSOLE_TOKEN: TOKEN, IDEM_DATA_DIR: join(work, 'data') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const port = /console: on http:\/\/\S+:(\d+)\//.exec(stderr)?.[1];
      if (port) resolve({ port: Number(port), stderr: () => stderr });
    });
    child.once('exit', (code) => reject(new Error(`idem console exited with ${code}:\n${stderr}`)));
  });
}

/** Stops it and waits until its stderr is closed, so everything it wrote has been read. */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('close', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('idem console --listen', () => {
  it('on 0.0.0.0: warns that it speaks plain HTTP and the token crosses the network in clear', async () => {
    const { port, stderr } = await startConsole('0.0.0.0:0');
    const child = children.at(-1);
    const login = await fetch(`http://127.0.0.1:${port}/login`);
    expect(login.status).toBe(200);
    await stop(child);
    expect(stderr()).toMatch(/WARNING: the console listens on 0\.0\.0\.0, which other machines can reach/);
    expect(stderr()).toContain('speaks plain HTTP');
    expect(stderr()).toContain('cross the network in clear');
    expect(stderr()).toContain('TLS proxy');
  }, 60_000);

  it('on 127.0.0.1: no warning', async () => {
    const { port, stderr } = await startConsole('127.0.0.1:0');
    const child = children.at(-1);
    expect((await fetch(`http://127.0.0.1:${port}/login`)).status).toBe(200);
    await stop(child);
    expect(stderr()).toContain('console: on http://127.0.0.1:');
    expect(stderr()).not.toContain('WARNING');
  }, 60_000);
});
