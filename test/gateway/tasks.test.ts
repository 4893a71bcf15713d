/**
 * Idem's tasks through the HTTP front (docs/tasks.md), with bearer auth and two actors: a task is
 * good only for its actor, a duplicate in flight is the same task, a client that declares no
 * tasks sees the answers it always saw, a tool that requires a task refuses such a client before
 * anything runs, and a 2025-11-25 session client gets its task and result the experimental way.
 * The counting upstream counts every run on the far side of the gateway; a held call (`hold_file`)
 * keeps a task running until the test releases it.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  CreateTaskResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TASKS_EXTENSION } from '../../src/protocol/tasks.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import {
  createdTaskId,
  type ModernTasksClient,
  modernTasksClient,
  untilTaskStatus,
} from '../support/modern-tasks.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

const TOKENS = { one: 'token-of-actor-one', two: 'token-of-actor-two' };
const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const counts = freshDir('tasks-counts');
let running: RunningGateway;
let one: ModernTasksClient;
let two: ModernTasksClient;
const sessions: Client[] = [];

beforeAll(async () => {
  running = await startHttpGateway({
    // One counting server under two names: one tool may be a task, the other must be.
    upstreams: { maybe: countingUpstream(counts), always: countingUpstream(counts) },
    tools: {
      maybe__count: { replay: 'review', task: 'optional', task_after: '0s' },
      always__count: { replay: 'review', task: 'required' },
    },
    auth: {
      bearer: [
        { token_sha256: sha(TOKENS.one), actor: 'actor-one' },
        { token_sha256: sha(TOKENS.two), actor: 'actor-two' },
      ],
    },
  });
  one = modernTasksClient(running.url, { token: TOKENS.one });
  two = modernTasksClient(running.url, { token: TOKENS.two });
}, 60_000);

afterAll(async () => {
  for (const session of sessions) await session.close().catch(() => {});
  await running?.close();
  removeTemporaries();
});

const release = (holdFile: string) => writeFileSync(join(counts, holdFile), '');

/** A 2025-11-25 session of the official SDK v1 client, as the actor of `token`. */
async function session(token: string): Promise<Client> {
  const client = new Client({ name: 'legacy-tasks-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(running.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  sessions.push(client);
  return client;
}

describe('a task is good only for its actor', () => {
  it("another actor's tasks/get and tasks/cancel are answered -32602, as for an id that does not exist; the task runs on", async () => {
    const args = { key: 'own-1', hold_file: 'hold-own-1' };
    const taskId = createdTaskId(await one.call('own-call', 'maybe__count', args));
    await vi.waitFor(() => expect(executionsOf(counts, 'own-1')).toBe(1), PATIENTLY);

    const unknownId = `tsk_${'x'.repeat(43)}`;
    const asUnknown = (reply: { error?: { code: number; message: string } }, id: string) => ({
      code: reply.error?.code,
      message: reply.error?.message.replace(id, '<id>'),
    });
    const notFound = asUnknown(await two.get(unknownId), unknownId);
    expect(notFound.code).toBe(-32602);
    expect(asUnknown(await two.get(taskId), taskId)).toEqual(notFound);
    expect(asUnknown(await two.cancel(taskId), taskId)).toEqual(notFound);
    expect(asUnknown(await two.cancel(unknownId), unknownId)).toEqual(notFound);

    // Actor two's cancel changed nothing: the task is still running for actor one, and ends as it ends.
    expect((await one.get(taskId)).result?.status).toBe('working');
    release(args.hold_file);
    const done = await untilTaskStatus(one, taskId, 'completed');
    expect(textOf(done.result)).toBe('own-1=1');
    expect(executionsOf(counts, 'own-1')).toBe(1);
  });
});

describe('a duplicate of a call in flight', () => {
  it('the same actor, the same arguments, a new request id: the same task, and the upstream counts one run', async () => {
    const args = { key: 'dup-1', hold_file: 'hold-dup-1' };
    const taskId = createdTaskId(await one.call('dup-call-1', 'maybe__count', args));
    await vi.waitFor(() => expect(executionsOf(counts, 'dup-1')).toBe(1), PATIENTLY);
    const again = await one.call('dup-call-2', 'maybe__count', args);
    expect(createdTaskId(again)).toBe(taskId);
    expect(again.result?.status).toBe('working');
    release(args.hold_file);
    expect(textOf((await untilTaskStatus(one, taskId, 'completed')).result)).toBe('dup-1=1');
    expect(executionsOf(counts, 'dup-1')).toBe(1);
  });
});

describe('a client that declares no tasks gets the answers it always got', () => {
  it('2026-07-28 without the extension: a plain result, and IDEM_IN_FLIGHT for the duplicate', async () => {
    const args = { key: 'plain-1', hold_file: 'hold-plain-1' };
    const first = one.call('plain-call-1', 'maybe__count', args, { tasks: false });
    await vi.waitFor(() => expect(executionsOf(counts, 'plain-1')).toBe(1), PATIENTLY);
    const duplicate = await one.call('plain-call-2', 'maybe__count', args, { tasks: false });
    expect(duplicate.result).not.toHaveProperty('taskId');
    expect(idemOf(duplicate.result)?.code).toBe('IDEM_IN_FLIGHT');
    release(args.hold_file);
    const answer = (await first).result;
    expect(answer).not.toHaveProperty('taskId');
    expect(answer?.resultType).not.toBe('task');
    expect(answer?.isError).toBeFalsy();
    expect(textOf(answer)).toBe('plain-1=1');
    expect(executionsOf(counts, 'plain-1')).toBe(1);
  });

  it('a 2025-11-25 session without params.task: a plain result, and IDEM_IN_FLIGHT for the duplicate', async () => {
    const client = await session(TOKENS.one);
    const args = { key: 'plain-2', hold_file: 'hold-plain-2' };
    const call = () => client.callTool({ name: 'maybe__count', arguments: args }) as Promise<CallToolResult>;
    const first = call();
    await vi.waitFor(() => expect(executionsOf(counts, 'plain-2')).toBe(1), PATIENTLY);
    expect(idemOf(await call())?.code).toBe('IDEM_IN_FLIGHT');
    release(args.hold_file);
    const answer = await first;
    expect(answer).not.toHaveProperty('task');
    expect(textOf(answer)).toBe('plain-2=1');
    expect(executionsOf(counts, 'plain-2')).toBe(1);
  });
});

describe('a tool that requires a task', () => {
  it('called without the extension: -32021 with data.requiredCapabilities, nothing recorded or run', async () => {
    const refused = await one.call('required-call-1', 'always__count', { key: 'req-1' }, { tasks: false });
    expect(refused.result).toBeUndefined();
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
    expect(await running.gateway.store.list({ tool: 'always__count' })).toEqual([]);
    expect(executionsOf(counts, 'req-1')).toBe(0);
  });

  it('called with the extension: a task, which ends completed with the result', async () => {
    const taskId = createdTaskId(await one.call('required-call-2', 'always__count', { key: 'req-2' }));
    expect(textOf((await untilTaskStatus(one, taskId, 'completed')).result)).toBe('req-2=1');
    expect(executionsOf(counts, 'req-2')).toBe(1);
  });
});

describe('a 2025-11-25 session client asking for a task', () => {
  it('the SDK v1 callToolStream with a task: the task is created, then its result', async () => {
    const client = await session(TOKENS.one);
    const messages: { type: string; task?: { taskId: string }; result?: unknown; error?: unknown }[] = [];
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'maybe__count', arguments: { key: 'stream-1' } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    ))
      messages.push(message);
    expect(messages[0]?.type).toBe('taskCreated');
    expect(messages[0]?.task?.taskId).toMatch(/^tsk_/);
    expect(messages.at(-1)?.type).toBe('result');
    expect(textOf(messages.at(-1)?.result)).toBe('stream-1=1');
    expect(executionsOf(counts, 'stream-1')).toBe(1);
  });

  it('params.task: tasks/get says working while the call is held, tasks/result gives the result', async () => {
    const client = await session(TOKENS.one);
    const args = { key: 'legacy-1', hold_file: 'hold-legacy-1' };
    const created = await client.request(
      { method: 'tools/call', params: { name: 'maybe__count', arguments: args, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const { taskId } = created.task;
    expect(taskId).toMatch(/^tsk_/);
    await vi.waitFor(() => expect(executionsOf(counts, 'legacy-1')).toBe(1), PATIENTLY);
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('working');
    // The other actor's session is told no such task exists.
    const other = await session(TOKENS.two);
    await expect(other.experimental.tasks.getTask(taskId)).rejects.toMatchObject({ code: -32602 });

    release(args.hold_file);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(textOf(result)).toBe('legacy-1=1');
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('completed');
    expect(executionsOf(counts, 'legacy-1')).toBe(1);
  });
});
