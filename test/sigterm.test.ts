/**
 * `idem gateway` gets SIGTERM while a call is at a slow upstream (issue 44 item 4). Before, it
 * exited in 50–80 ms: the caller got no answer, the upstream finished 1–2 s later, and the
 * execution became `unknown` — a retry then needed an operator. Now it stops taking calls (HTTP:
 * 503 with Retry-After for a new request or session, /readyz 503; stdio: IDEM_NOT_EXECUTED), lets
 * the call finish, records it, answers it, and exits 0. A grace (`shutdown_grace`) bounds the wait:
 * past it the gateway exits 1 and only what outlived it is left unfinished; a second signal exits
 * at once. The same over the older HTTP+SSE transport (`--sse`): no new stream, no new call.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { idemCodeOf, META } from '../src/executions/answers.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { executionsOf, finishedOf } from './gateway/fixtures/counting-server.js';
import { countingUpstream } from './support/counting-upstream.js';
import {
  mcpClient,
  startGatewayCli,
  startGatewayProcess,
  stdioIdemClient,
} from './support/gateway-process.js';
import { freshDir, removeTemporaries } from './support/temp-dirs.js';
import { PATIENTLY } from './support/wait.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});
afterAll(removeTemporaries);

const held = (client: Client, key: string) =>
  client.callTool({ name: 'count', arguments: { key, hold_file: `hold-${key}` } }, undefined, {
    timeout: 120_000,
  }) as Promise<CallToolResult>;

/** The execution's state as the gateway left it in its data directory (read once the gateway is gone). */
async function stateOf(dataDir: string, ref: string): Promise<{ state?: string; delivered: boolean }> {
  const store = await SqliteStore.open({ path: join(dataDir, 'idem.db') });
  try {
    const record = await store.get(ref);
    return { ...(record ? { state: record.state } : {}), delivered: Boolean(record?.deliveredAt) };
  } finally {
    await store.close();
  }
}

async function httpGateway(grace?: string) {
  const dataDir = freshDir('sigterm');
  const counts = freshDir('sigterm-counts');
  const gateway = await startGatewayProcess(
    {
      data_dir: dataDir,
      upstreams: { counter: countingUpstream(counts) },
      ...(grace ? { shutdown_grace: grace } : {}),
    },
    join(dataDir, 'idem.json'),
  );
  cleanups.push(async () => {
    writeFileSync(join(counts, 'hold-slow'), '');
    await gateway.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve) => gateway.child.once('exit', (code) => resolve(code)));
  const client = await mcpClient(gateway.url, 'sigterm-agent');
  cleanups.push(() => client.close());
  // A call the upstream has counted (the effect happened) and holds, unanswered.
  const call = held(client, 'slow');
  // Awaited by the test that expects an answer; one cut short must not end the run unobserved.
  call.catch(() => {});
  await vi.waitFor(() => expect(executionsOf(counts, 'slow')).toBe(1), PATIENTLY);
  return {
    dataDir,
    counts,
    gateway,
    exited,
    client,
    call,
    release: () => writeFileSync(join(counts, 'hold-slow'), ''),
  };
}

describe('idem gateway on SIGTERM with a call in flight', { timeout: 120_000 }, () => {
  it('HTTP: takes nothing new (503), lets the call finish, records and answers it, then exits 0', async () => {
    const { dataDir, counts, gateway, exited, client, call, release } = await httpGateway();
    gateway.child.kill('SIGTERM');
    await vi.waitFor(() => expect(gateway.stderr()).toContain('SIGTERM: taking no new calls'), PATIENTLY);

    // A new session, and a new call in the open one: refused before anything runs, safe to send again.
    const opening = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'late', version: '1' },
        },
      }),
    });
    expect(opening.status).toBe(503);
    expect(opening.headers.get('retry-after')).toBe('1');
    expect(((await opening.json()) as { error: { message: string } }).error.message).toContain(
      'shutting down; nothing of this request was run',
    );
    await expect(held(client, 'refused')).rejects.toThrow(/shutting down; nothing of this request was run/);
    const readyz = await fetch(new URL('/readyz', gateway.url));
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ ready: false, draining: true });
    expect(executionsOf(counts, 'refused')).toBe(0);

    // Still there: the call in flight finishes, and its caller is answered.
    expect(gateway.child.exitCode).toBeNull();
    release();
    const answer = await call;
    expect(answer.isError).toBeFalsy();
    expect(answer.structuredContent).toEqual({ key: 'slow', value: 1 });
    expect(await exited).toBe(0);
    const ref = answer._meta?.[META.executionId] as string;
    expect(await stateOf(dataDir, ref)).toEqual({ state: 'completed', delivered: true });
    expect(executionsOf(counts, 'slow')).toBe(1);
    expect(gateway.stderr()).not.toContain('unhandled rejection');
  });

  it('past shutdown_grace, exits 1 and says what it cut; a second signal exits at once', async () => {
    const graced = await httpGateway('1s');
    graced.gateway.child.kill('SIGTERM');
    expect(await graced.exited).toBe(1);
    // Cut, not finished: the upstream never answered it.
    expect(finishedOf(graced.counts, 'slow')).toBe(0);
    expect(graced.gateway.stderr()).toContain(
      'shutdown_grace ended with 1 call(s) or outcome(s) still under way: they are cut',
    );

    const twice = await httpGateway();
    twice.gateway.child.kill('SIGTERM');
    await vi.waitFor(
      () => expect(twice.gateway.stderr()).toContain('SIGTERM: taking no new calls'),
      PATIENTLY,
    );
    twice.gateway.child.kill('SIGTERM');
    expect(await twice.exited).toBe(143);
    expect(twice.gateway.stderr()).toContain('SIGTERM again: exiting now');
    // The upstream was still holding the call: nothing it did was waited for.
    expect(finishedOf(twice.counts, 'slow')).toBe(0);
  });

  it('stdio: a new call is IDEM_NOT_EXECUTED, the call in flight is answered and recorded, then it exits', async () => {
    const dataDir = freshDir('sigterm-stdio');
    const counts = freshDir('sigterm-stdio-counts');
    const upstream = countingUpstream(counts);
    const { client, transport, stderr } = await stdioIdemClient(
      ['gateway', '--', upstream.command, ...upstream.args],
      { name: 'sigterm-stdio-agent', env: { IDEM_DATA_DIR: dataDir } },
    );
    const pid = transport.pid as number;
    let closed = false;
    client.onclose = () => {
      closed = true;
    };
    cleanups.push(async () => {
      writeFileSync(join(counts, 'hold-slow'), '');
      await client.close();
    });
    const call = held(client, 'slow');
    call.catch(() => {});
    await vi.waitFor(() => expect(executionsOf(counts, 'slow')).toBe(1), PATIENTLY);

    process.kill(pid, 'SIGTERM');
    await vi.waitFor(() => expect(stderr()).toContain('SIGTERM: taking no new calls'), PATIENTLY);
    const refused = await held(client, 'refused');
    expect(idemCodeOf(refused)).toBe('IDEM_NOT_EXECUTED');
    expect(executionsOf(counts, 'refused')).toBe(0);

    writeFileSync(join(counts, 'hold-slow'), '');
    const answer = await call;
    expect(answer.isError).toBeFalsy();
    expect(answer.structuredContent).toEqual({ key: 'slow', value: 1 });
    // It exits once the call is recorded (the client sees its stdio close).
    await vi.waitFor(() => expect(closed).toBe(true), PATIENTLY);
    const ref = answer._meta?.[META.executionId] as string;
    expect(await stateOf(dataDir, ref)).toEqual({ state: 'completed', delivered: true });
    expect(stderr()).not.toContain('unhandled rejection');
  });

  it('HTTP+SSE (--sse): no new event stream and no new call (503), the call in flight answered on its stream, exit 0', async () => {
    const counts = freshDir('sigterm-sse-counts');
    const upstream = countingUpstream(counts);
    const gateway = await startGatewayCli(
      ['--listen', '127.0.0.1:0', '--sse', '--', upstream.command, ...upstream.args],
      { env: { IDEM_DATA_DIR: freshDir('sigterm-sse') } },
    );
    cleanups.push(async () => {
      writeFileSync(join(counts, 'hold-slow'), '');
      await gateway.kill('SIGKILL');
    });
    const exited = new Promise<number | null>((resolve) =>
      gateway.child.once('exit', (code) => resolve(code)),
    );
    const sse = new URL('sse', gateway.url);
    const client = new Client({ name: 'old-sse-agent', version: '1' });
    await client.connect(new SSEClientTransport(sse));
    cleanups.push(() => client.close());
    const call = held(client, 'slow');
    call.catch(() => {});
    await vi.waitFor(() => expect(executionsOf(counts, 'slow')).toBe(1), PATIENTLY);

    gateway.child.kill('SIGTERM');
    await vi.waitFor(() => expect(gateway.stderr()).toContain('SIGTERM: taking no new calls'), PATIENTLY);
    const opening = await fetch(sse, { headers: { accept: 'text/event-stream' } });
    expect(opening.status).toBe(503);
    await opening.body?.cancel();
    await expect(held(client, 'refused')).rejects.toThrow(/503|shutting down/);
    expect(executionsOf(counts, 'refused')).toBe(0);

    expect(gateway.child.exitCode).toBeNull();
    writeFileSync(join(counts, 'hold-slow'), '');
    const answer = await call;
    expect(answer.isError).toBeFalsy();
    expect(answer.structuredContent).toEqual({ key: 'slow', value: 1 });
    expect(await exited).toBe(0);
    expect(executionsOf(counts, 'slow')).toBe(1);
  });
});
