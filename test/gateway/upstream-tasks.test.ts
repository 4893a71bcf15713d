/**
 * An upstream's own task, followed to its end by the gateway: the execution's
 * outcome is how the task ended, recorded when it ended, not the
 * CreateTaskResult the upstream answered the call with.
 *
 * Upstreams: the published @modelcontextprotocol/server-everything (its
 * `simulate-research-query` requires a task and works about 4 s), and a small
 * 2025-11-25 task server that counts its runs (fixtures/task-server.ts). The
 * official SDK client over loopback HTTP; no mocks.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  CreateTaskResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ActivityEntry } from '../../src/journal/events.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { readRuns, runsOf } from './fixtures/task-server.js';

const EVERYTHING = {
  command: process.execPath,
  args: [join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
};
const taskServer = (dir: string) => ({
  command: process.execPath,
  args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/task-server.ts')), '--dir', dir],
  cwd: REPO_ROOT,
});

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {});
});
afterAll(removeTemporaries);

async function gateway(upstreams: Record<string, unknown>): Promise<RunningGateway> {
  const gw = await startHttpGateway({ upstreams } as Parameters<typeof startHttpGateway>[0]);
  open.push(gw);
  return gw;
}

async function connect(url: string, name = 'task-agent'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  open.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const refOf = (result: CallToolResult) =>
  idemOf(result)?.ref ?? (result._meta?.['io.idem/execution-id'] as string);
const eventOf = (journal: ActivityEntry[], kind: string, state?: string) =>
  journal.find((e) => e.kind === kind && (state === undefined || e.detail.state === state));

describe('server-everything simulate-research-query through the gateway', () => {
  it('a client without tasks gets the final report; the outcome is recorded when the task ended, with the upstream task journaled', async () => {
    const gw = await gateway({ everything: EVERYTHING });
    const client = await connect(gw.url, 'plain-agent');
    const result = await call(client, 'simulate-research-query', { topic: 'idempotency keys' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain('# Research Report: idempotency keys');
    // The upstream's own mark names its task, which the client never sees.
    expect(result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();

    const ref = refOf(result);
    const record = await gw.gateway.store.get(ref);
    expect(record?.state).toBe('completed');
    expect(textOf(record?.outcome?.result)).toContain('# Research Report: idempotency keys');
    const journal = await gw.gateway.store.journalFor(ref);
    const dispatched = eventOf(journal, 'dispatched');
    const upstreamTask = eventOf(journal, 'upstream_task');
    const outcome = eventOf(journal, 'outcome', 'completed');
    expect(upstreamTask?.detail).toEqual({
      generation: 'v1',
      upstream: 'everything',
      upstreamTaskId: expect.any(String),
    });
    // Four stages of a second each: recorded at the task's end, not at its creation.
    expect((outcome?.at ?? 0) - (dispatched?.at ?? Number.POSITIVE_INFINITY)).toBeGreaterThanOrEqual(3000);
    expect(upstreamTask?.seq).toBeGreaterThan(dispatched?.seq ?? Number.POSITIVE_INFINITY);
    expect(upstreamTask?.seq).toBeLessThan(outcome?.seq ?? 0);
  });

  it('a task-capable SDK client (callToolStream) gets the report too: as a plain result, the gateway following the task', async () => {
    const gw = await gateway({ everything: EVERYTHING });
    const client = await connect(gw.url, 'streaming-agent');
    const messages: { type: string; result?: unknown }[] = [];
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'simulate-research-query', arguments: { topic: 'leases' } },
      CallToolResultSchema,
    ))
      messages.push(message);
    expect(messages.map((m) => m.type)).toEqual(['result']);
    expect(textOf(messages[0]?.result)).toContain('# Research Report: leases');
  });
});

describe('a 2025-11-25 task upstream that counts its runs', () => {
  it('a task that fails after it was created is recorded failed, with its isError result', async () => {
    const dir = freshDir('task-runs');
    const gw = await gateway({ tasks: taskServer(dir) });
    const client = await connect(gw.url);
    const result = await call(client, 'fail_task', { key: 'f1' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('could not finish f1: the disk is full');
    const ref = refOf(result);
    const record = await gw.gateway.store.get(ref);
    expect(record?.state).toBe('failed');
    expect(record?.outcome?.result).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'could not finish f1: the disk is full' }],
    });
    expect(eventOf(await gw.gateway.store.journalFor(ref), 'upstream_task')).toBeDefined();
    expect(runsOf(dir, 'fail_task', 'f1')).toBe(1);

    // The target said no, so nothing took effect: the same call again is a new attempt, linked to it.
    const again = await call(client, 'fail_task', { key: 'f1' });
    expect(again.isError).toBe(true);
    expect(runsOf(dir, 'fail_task', 'f1')).toBe(2);
    expect(eventOf(await gw.gateway.store.journalFor(ref), 'repeat')?.detail).toEqual({
      repeated_by: refOf(again),
      reason: 'after_failure',
    });
  });

  it('a task the upstream no longer knows is recorded unknown, said so, never failed', async () => {
    const dir = freshDir('task-runs');
    const gw = await gateway({ tasks: taskServer(dir) });
    const client = await connect(gw.url);
    const result = await call(client, 'vanish_task', { key: 'v1' });
    // Unknown, and the cautious contract (review) says an operator settles it.
    expect(idemOf(result)).toMatchObject({ code: 'IDEM_REVIEW_REQUIRED', state: 'unknown' });
    expect(textOf(result)).toContain('the upstream no longer knows its task');
    const ref = refOf(result);
    const record = await gw.gateway.store.get(ref);
    expect(record?.state).toBe('unknown');
    expect(record?.outcome).toBeNull();
    expect(eventOf(await gw.gateway.store.journalFor(ref), 'upstream_task')).toBeDefined();
    expect(runsOf(dir, 'vanish_task', 'v1')).toBe(1);
  });

  it('a retry while the task runs attaches to it: one run, one result, then replayed', async () => {
    const dir = freshDir('task-runs');
    const gw = await gateway({ tasks: taskServer(dir) });
    const client = await connect(gw.url);
    const args = { key: 'c1', release_file: 'release-c1' };
    const first = call(client, 'count_task', args);
    // The task runs, and the gateway follows it.
    await vi.waitFor(async () => {
      expect(runsOf(dir, 'count_task', 'c1')).toBe(1);
      const [record] = await gw.gateway.store.list({ tool: 'count_task' });
      expect(record?.state).toBe('dispatched');
      expect(eventOf(await gw.gateway.store.journalFor(record?.id ?? ''), 'upstream_task')).toBeDefined();
    }, PATIENTLY);

    const retry = await call(client, 'count_task', args);
    expect(idemOf(retry)?.code).toBe('IDEM_IN_FLIGHT');
    writeFileSync(join(dir, 'release-c1'), '');
    const result = await first;
    expect(textOf(result)).toBe('counted c1');
    expect(refOf(retry)).toBe(refOf(result));

    const later = await call(client, 'count_task', args);
    expect(textOf(later)).toBe('counted c1');
    expect(later._meta?.['io.idem/replayed']).toBe(true);
    expect(runsOf(dir, 'count_task', 'c1')).toBe(1);
    expect(await gw.gateway.store.list({ tool: 'count_task' })).toHaveLength(1);
    // Asked for by the gateway, with the contract's timeout (10 minutes by default) as its ttl.
    expect(readRuns(dir).find((r) => r.key === 'c1')?.ttl).toBe(600_000);
  });

  it("a client's own task param is never passed on: the upstream is asked only what the gateway asks", async () => {
    const dir = freshDir('task-runs');
    const gw = await gateway({ tasks: taskServer(dir) });
    const client = await connect(gw.url);
    // The client asked for a task (2025-11-25): it gets Idem's own, whose result is the upstream's plain call.
    const created = (await client.request(
      {
        method: 'tools/call',
        params: { name: 'maybe_task', arguments: { key: 'm1' }, task: { ttl: 12_345 } },
      },
      CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    expect(created.task.taskId).toMatch(/^tsk_/);
    const result = (await client.request(
      { method: 'tasks/result', params: { taskId: created.task.taskId } },
      CallToolResultSchema,
    )) as CallToolResult;
    expect(textOf(result)).toBe('maybe m1');
    // The optional tool was called without `task`: the upstream ran it as its own plain call.
    expect(readRuns(dir).filter((r) => r.key === 'm1')).toEqual([
      { tool: 'maybe_task', key: 'm1', taskId: expect.any(String), ttl: null },
    ]);
    expect(eventOf(await gw.gateway.store.journalFor(refOf(result)), 'upstream_task')).toBeUndefined();
  });
});
