/**
 * Task status notifications through the HTTP front (docs/tasks.md), with bearer auth and two
 * actors, heard by the official clients: a 2025-11-25 session (SDK v1) hears
 * `notifications/tasks/status` for the task it made, a 2026-07-28 client (the v2 SDK) hears
 * `notifications/tasks` on the `subscriptions/listen` stream it asked for its tasks on — and
 * another actor's session or stream hears nothing of either. And a 2025-11-25 `tasks/result` that
 * waits on a task that does not end stops waiting when its request is cancelled.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { TaskStatusNotificationV1Schema } from '@modelcontextprotocol/ext-tasks/core/v1';
import { TaskStatusNotificationV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TASKS_EXTENSION } from '../../src/protocol/tasks.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { createdTaskId, modernTasksClient } from '../support/modern-tasks.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

const TOKENS = { one: 'token-of-actor-one', two: 'token-of-actor-two' };
const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const counts = freshDir('task-notifications-counts');
let running: RunningGateway;
const closing: { close(): Promise<unknown> }[] = [];

beforeAll(async () => {
  running = await startHttpGateway({
    upstreams: { maybe: countingUpstream(counts) },
    tools: { count: { replay: 'review', task: 'optional', task_after: '0s' } },
    auth: {
      bearer: [
        { token_sha256: sha(TOKENS.one), actor: 'actor-one' },
        { token_sha256: sha(TOKENS.two), actor: 'actor-two' },
      ],
    },
  });
}, 60_000);

afterAll(async () => {
  for (const client of closing) await client.close().catch(() => {});
  await running?.close();
  removeTemporaries();
});

const release = (holdFile: string) => writeFileSync(join(counts, holdFile), '');
const headers = (token: string) => ({ authorization: `Bearer ${token}` });

/** A 2025-11-25 session of the SDK v1 client, as the actor of `token`, and the task statuses it hears. */
async function legacySession(token: string) {
  const client = new Client({ name: 'legacy-notified-agent', version: '1.0.0' });
  const heard: { taskId: string; status: string }[] = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
    // The ext-tasks schema of the notification: what a tasks client parses it with.
    const { params } = TaskStatusNotificationV1Schema.parse({ jsonrpc: '2.0', ...notification });
    heard.push({ taskId: params.taskId, status: params.status });
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(running.url), { requestInit: { headers: headers(token) } }),
  );
  closing.push(client);
  return { client, heard };
}

async function legacyTask(client: Client, args: Record<string, unknown>): Promise<string> {
  const created = await client.request(
    { method: 'tools/call', params: { name: 'count', arguments: args, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  return created.task.taskId;
}

describe('2025-11-25: notifications/tasks/status to the session that made the task', () => {
  it('completed is heard when the held call ends, and the other actor hears nothing of it', async () => {
    const one = await legacySession(TOKENS.one);
    const two = await legacySession(TOKENS.two);
    const own = await legacyTask(one.client, { key: 'note-1', hold_file: 'hold-note-1' });
    const others = await legacyTask(two.client, { key: 'note-2', hold_file: 'hold-note-2' });
    await vi.waitFor(() => expect(executionsOf(counts, 'note-1')).toBe(1), PATIENTLY);

    release('hold-note-1');
    await vi.waitFor(() => expect(one.heard).toContainEqual({ taskId: own, status: 'completed' }), PATIENTLY);
    const result = await one.client.experimental.tasks.getTaskResult(own, CallToolResultSchema);
    expect(textOf(result)).toBe('note-1=1');

    // Actor two's own task ends after actor one's: when two has heard of its own, anything sent
    // about one's task to two would have come before.
    await vi.waitFor(() => expect(executionsOf(counts, 'note-2')).toBe(1), PATIENTLY);
    release('hold-note-2');
    await vi.waitFor(
      () => expect(two.heard).toContainEqual({ taskId: others, status: 'completed' }),
      PATIENTLY,
    );
    expect(two.heard.map((n) => n.taskId)).not.toContain(own);
    expect(one.heard.map((n) => n.taskId)).not.toContain(others);
  });

  it('a tasks/cancel is heard as cancelled', async () => {
    const one = await legacySession(TOKENS.one);
    const taskId = await legacyTask(one.client, { key: 'note-3', hold_file: 'hold-note-3' });
    await vi.waitFor(() => expect(executionsOf(counts, 'note-3')).toBe(1), PATIENTLY);
    await one.client.experimental.tasks.cancelTask(taskId);
    await vi.waitFor(() => expect(one.heard).toContainEqual({ taskId, status: 'cancelled' }), PATIENTLY);
    release('hold-note-3');
  });
});

/** A 2026-07-28 client of the v2 SDK, as the actor of `token`, and the task notifications its listen streams hear. */
async function modernListener(token: string) {
  const client = new ModernClient(
    { name: 'modern-notified-agent', version: '1.0.0' },
    {
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  const heard: Record<string, unknown>[] = [];
  client.fallbackNotificationHandler = async (notification) => {
    if (notification.method !== 'notifications/tasks') return;
    heard.push(TaskStatusNotificationV2Schema.parse({ jsonrpc: '2.0', ...notification }).params);
  };
  await client.connect(
    new ModernTransport(new URL(running.url), { requestInit: { headers: headers(token) } }),
  );
  closing.push(client);
  return { client, heard };
}

describe('2026-07-28: notifications/tasks on the subscriptions/listen stream that asked for the task', () => {
  it('the stream hears working at once, then completed with the result; the other actor hears nothing of it', async () => {
    const callerOne = modernTasksClient(running.url, { token: TOKENS.one });
    const callerTwo = modernTasksClient(running.url, { token: TOKENS.two });
    const own = createdTaskId(
      await callerOne.call('listen-call-1', 'count', { key: 'note-4', hold_file: 'hold-note-4' }),
    );
    const others = createdTaskId(
      await callerTwo.call('listen-call-2', 'count', { key: 'note-7', hold_file: 'hold-note-7' }),
    );
    const one = await modernListener(TOKENS.one);
    const two = await modernListener(TOKENS.two);
    const mine = await one.client.listen({ taskIds: [own] } as never);
    // Actor two asks for both: its own task, and actor one's (which reads as one that does not exist).
    const theirs = await two.client.listen({ taskIds: [own, others] } as never);
    try {
      await vi.waitFor(
        () => expect(one.heard).toContainEqual(expect.objectContaining({ taskId: own, status: 'working' })),
        PATIENTLY,
      );
      release('hold-note-4');
      await vi.waitFor(
        () => expect(one.heard).toContainEqual(expect.objectContaining({ taskId: own, status: 'completed' })),
        PATIENTLY,
      );
      const completed = one.heard.find((n) => n.status === 'completed');
      expect(textOf(completed?.result)).toBe('note-4=1');

      // Actor two's own task ends after actor one's: by the time two hears of it, anything about
      // one's task would have come first on two's stream.
      await vi.waitFor(() => expect(executionsOf(counts, 'note-7')).toBe(1), PATIENTLY);
      release('hold-note-7');
      await vi.waitFor(
        () =>
          expect(two.heard).toContainEqual(expect.objectContaining({ taskId: others, status: 'completed' })),
        PATIENTLY,
      );
      expect(two.heard.map((n) => n.taskId)).not.toContain(own);
      expect(one.heard.map((n) => n.taskId)).not.toContain(others);
    } finally {
      await mine.close();
      await theirs.close();
    }
  });

  it('a stream that asks for tasks without declaring the extension is refused with -32021', async () => {
    const client = new ModernClient(
      { name: 'modern-undeclared', version: '1.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new ModernTransport(new URL(running.url), { requestInit: { headers: headers(TOKENS.one) } }),
    );
    closing.push(client);
    await expect(client.listen({ taskIds: ['tsk_x'] } as never)).rejects.toMatchObject({ code: -32021 });
  });
});

describe('2025-11-25 tasks/result waits no longer than its request', () => {
  it('cancelled while the task runs on: the wait ends (its task watch goes), and nothing is left waiting', async () => {
    const one = await legacySession(TOKENS.one);
    const taskId = await legacyTask(one.client, { key: 'note-5', hold_file: 'hold-note-5' });
    await vi.waitFor(() => expect(executionsOf(counts, 'note-5')).toBe(1), PATIENTLY);
    const engine = running.gateway.engine;
    // One watch: the session's own, for the notifications of the task it made.
    await vi.waitFor(() => expect(engine.taskWatches).toBe(1), PATIENTLY);
    const before = engine.taskWatches;
    const cancel = new AbortController();
    const waiting = one.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, {
      signal: cancel.signal,
    });
    // The wait is watching the task (beside the session's own watch for its notifications).
    await vi.waitFor(() => expect(engine.taskWatches).toBe(before + 1), PATIENTLY);
    // The SDK sends notifications/cancelled for the request it aborts.
    cancel.abort('the agent moved on');
    await expect(waiting).rejects.toThrow();
    await vi.waitFor(() => expect(engine.taskWatches).toBe(before), PATIENTLY);

    // The task itself runs on, and ends as it ends.
    release('hold-note-5');
    const result = await one.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(textOf(result)).toBe('note-5=1');
  });

  it('the session closing ends the wait too', async () => {
    const one = await legacySession(TOKENS.one);
    const taskId = await legacyTask(one.client, { key: 'note-6', hold_file: 'hold-note-6' });
    await vi.waitFor(() => expect(executionsOf(counts, 'note-6')).toBe(1), PATIENTLY);
    const engine = running.gateway.engine;
    await vi.waitFor(() => expect(engine.taskWatches).toBe(1), PATIENTLY);
    const before = engine.taskWatches;
    const waiting = one.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    waiting.catch(() => {});
    await vi.waitFor(() => expect(engine.taskWatches).toBe(before + 1), PATIENTLY);
    // Ending the session (DELETE) ends both its notification watch and the wait.
    await (one.client.transport as StreamableHTTPClientTransport).terminateSession();
    await vi.waitFor(() => expect(engine.taskWatches).toBe(before - 1), PATIENTLY);
    release('hold-note-6');
  });
});
