/**
 * Idem's tasks in the library (docs/tasks.md): a server built on the SDK v1 with `idem.tool` and
 * a contract `task:` serves tasks as the gateway does — to a 2026-07-28 client of the official v2
 * SDK with the tasks extension (`@modelcontextprotocol/ext-tasks`) and to a 2025-11-25 client of
 * the SDK v1 — and exactly the answers it always gave to a client that declares no tasks. The
 * handlers count their runs on the far side; a gate per release holds a run until the test opens it.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type RawClientDispatch } from '@modelcontextprotocol/ext-tasks/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  CreateTaskResultSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { type ServedHttp, serveStreamableHttp } from '../../src/library/http.js';
import { Idem, insideOf } from '../../src/library/idem.js';
import { ENVELOPE } from '../../src/protocol/revisions.js';
import { TASKS_EXTENSION } from '../../src/protocol/tasks.js';
import { Gate } from '../support/gate.js';
import { createdTaskId, modernTasksClient, untilTaskStatus } from '../support/modern-tasks.js';
import { MCP_HEADERS, messagesOf, rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

const dataDir = freshDir('lib-tasks');
const runs = new Map<string, number>();
const gates = new Map<string, Gate>();
const gateOf = (release: string) => {
  let gate = gates.get(release);
  if (!gate) {
    gate = new Gate();
    gates.set(release, gate);
  }
  return gate;
};
const ranTimes = (release: string) => runs.get(release) ?? 0;

let idem: Idem;
let http: ServedHttp;
const closers: (() => Promise<void>)[] = [];

/** A tool that may be a task once it has run 100 ms, and one that is always a task. */
function newServer(): McpServer {
  const server = new McpServer({ name: 'lib-tasks', version: '1.0.0' });
  const inputSchema = { release: z.string(), fail: z.boolean().optional() };
  const handler = async ({ release, fail }: { release: string; fail?: boolean | undefined }) => {
    runs.set(release, ranTimes(release) + 1);
    await gateOf(release).wait();
    return fail
      ? { content: [{ type: 'text' as const, text: `${release} failed` }], isError: true }
      : { content: [{ type: 'text' as const, text: `deployed ${release}` }] };
  };
  idem.tool(
    server,
    'deploy',
    { inputSchema, contract: { replay: 'review', task: 'optional', task_after: '100ms' } },
    handler,
  );
  idem.tool(server, 'migrate', { inputSchema, contract: { replay: 'review', task: 'required' } }, handler);
  idem.tool(server, 'plain', { inputSchema, contract: { replay: 'review' } }, handler);
  return server;
}

async function start(): Promise<void> {
  idem = await Idem.open({ dataDir });
  http = await serveStreamableHttp(idem, newServer);
}

async function stop(): Promise<void> {
  await http.close();
  await idem.close();
}

beforeAll(start);

afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  for (const gate of gates.values()) gate.open();
  await stop();
  removeTemporaries();
});

/** A 2025-11-25 session of the SDK v1 client; the actor is this user and the client's name. */
async function legacyClient(name = 'legacy-agent'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  closers.push(() => client.close());
  return client;
}

/**
 * A 2026-07-28 client of the v2 SDK with the tasks extension: its task requests go out as raw
 * JSON-RPC over HTTP with the revision's envelope (the extension's `rawDispatch`).
 */
async function modernSession(name = 'modern-agent') {
  const client = new ClientV2(
    { name, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new HttpV2(new URL(http.url)));
  const session = createTaskSessionFromClient(client, {
    endpointId: `lib-tasks-${name}`,
    rawDispatch: async (request) => {
      const message = { jsonrpc: '2.0', id: randomUUID(), ...(request as object) } as unknown as {
        id: string;
        method: string;
        params?: { name?: string; taskId?: string };
      };
      const response = await rawRequest(http.url, {
        headers: {
          ...MCP_HEADERS,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': message.method,
          // The revision's Mcp-Name: the tool of a call, the task of a task request.
          'mcp-name': String(message.params?.name ?? message.params?.taskId),
        },
        body: JSON.stringify(message),
      });
      const reply = messagesOf(response).find((m) => m.id === message.id);
      if (!reply) throw new Error(`no reply to ${message.method}: ${response.status} ${response.text}`);
      return (
        reply.error ? { kind: 'error', error: reply.error } : { kind: 'result', result: reply.result }
      ) as Awaited<ReturnType<RawClientDispatch>>;
    },
    v2RequestFraming: {
      protocolVersion: '2026-07-28',
      clientInfo: { name, version: '1.0.0' },
      clientCapabilities: {},
    },
  });
  closers.push(async () => {
    await session.close();
    await client.close();
  });
  return session;
}

describe('what a client is told of tasks', () => {
  it('2025-11-25 initialize: capabilities.tasks; tools/list: execution.taskSupport per contract', async () => {
    const client = await legacyClient();
    expect(client.getServerCapabilities()?.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    expect(support).toMatchObject({ deploy: 'optional', migrate: 'required', plain: 'forbidden' });
  });

  it('2026-07-28 server/discover: the tasks extension, and no capabilities.tasks', async () => {
    const response = await rawRequest(http.url, {
      headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'discover-1',
        method: 'server/discover',
        params: { _meta: { [ENVELOPE.protocolVersion]: '2026-07-28', [ENVELOPE.clientCapabilities]: {} } },
      }),
    });
    const [reply] = messagesOf(response) as [{ result: { capabilities: Record<string, unknown> } }];
    expect(reply.result.capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    expect(reply.result.capabilities).not.toHaveProperty('tasks');
  });
});

describe('a 2026-07-28 client with the tasks extension (v2 SDK + ext-tasks)', () => {
  it('a slow handler becomes a task; the task ends completed with the result; the handler ran once', async () => {
    const session = await modernSession();
    const execution = await session.callTool('deploy', { release: 'v2-slow' });
    expect(execution.kind).toBe('task');
    expect(ranTimes('v2-slow')).toBe(1);
    gateOf('v2-slow').open();
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(textOf(outcome.status === 'completed' ? outcome.result : undefined)).toBe('deployed v2-slow');
    expect(ranTimes('v2-slow')).toBe(1);
  });

  it("the handler's own failure: the task is completed, its result isError", async () => {
    const session = await modernSession();
    gateOf('v2-fail').open();
    const execution = await session.callTool('migrate', { release: 'v2-fail', fail: true });
    expect(execution.kind).toBe('task');
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    const result = (outcome.status === 'completed' ? outcome.result : {}) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('v2-fail failed');
  });

  it('the call repeated with the same intent while it runs: the same task, one run', async () => {
    const one = modernTasksClient(http.url, { clientName: 'modern-agent' });
    const args = { release: 'v2-dup' };
    const taskId = createdTaskId(await one.call('dup-1', 'deploy', args));
    const again = await one.call('dup-2', 'deploy', args);
    expect(createdTaskId(again)).toBe(taskId);
    expect(again.result?.status).toBe('working');
    gateOf('v2-dup').open();
    const done = await untilTaskStatus(one, taskId, 'completed');
    expect(textOf(done.result)).toBe('deployed v2-dup');
    expect(ranTimes('v2-dup')).toBe(1);
  });

  it("another actor's tasks/get and tasks/cancel: -32602, as for a task that does not exist", async () => {
    const one = modernTasksClient(http.url, { clientName: 'modern-agent' });
    const other = modernTasksClient(http.url, { clientName: 'another-agent' });
    const taskId = createdTaskId(await one.call('own-1', 'migrate', { release: 'v2-own' }));
    expect((await other.get(taskId)).error?.code).toBe(-32602);
    expect((await other.cancel(taskId)).error?.code).toBe(-32602);
    expect((await one.get(taskId)).result?.status).toBe('working');
    gateOf('v2-own').open();
    await untilTaskStatus(one, taskId, 'completed');
  });
});

describe('a 2025-11-25 client asking for tasks (SDK v1, params.task)', () => {
  it('the call is a task at once; tasks/get working; the same call again is the same task; tasks/result the result', async () => {
    const client = await legacyClient();
    const call = () =>
      client.request(
        {
          method: 'tools/call',
          params: { name: 'deploy', arguments: { release: 'v1-slow' }, task: { ttl: 60_000 } },
        },
        CreateTaskResultSchema,
      );
    const { task } = await call();
    expect(task.taskId).toMatch(/^tsk_/);
    await vi.waitFor(() => expect(ranTimes('v1-slow')).toBe(1), PATIENTLY);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    expect((await call()).task.taskId).toBe(task.taskId);
    gateOf('v1-slow').open();
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textOf(result)).toBe('deployed v1-slow');
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    expect(ranTimes('v1-slow')).toBe(1);
  });

  it("the handler's own failure: the task is failed, tasks/result the isError result", async () => {
    const client = await legacyClient();
    gateOf('v1-fail').open();
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: { name: 'migrate', arguments: { release: 'v1-fail', fail: true }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('v1-fail failed');
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
  });

  it("another actor's session: tasks/get and tasks/cancel are -32602; tasks/list shows only its own", async () => {
    const client = await legacyClient();
    const other = await legacyClient('another-agent');
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'migrate', arguments: { release: 'v1-own' }, task: {} } },
      CreateTaskResultSchema,
    );
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (error: unknown) => (error instanceof McpError ? error.code : error),
      );
    expect(await refusal(other.experimental.tasks.getTask(task.taskId))).toBe(-32602);
    expect(await refusal(other.experimental.tasks.cancelTask(task.taskId))).toBe(-32602);
    const listed = (await other.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
    expect(listed).not.toContain(task.taskId);
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(task.taskId);
    gateOf('v1-own').open();
    await vi.waitFor(
      async () => expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed'),
      PATIENTLY,
    );
  });
});

describe('a client that declares no tasks gets the answers it always got', () => {
  it('2026-07-28 without the extension: the plain result, and IDEM_IN_FLIGHT for the duplicate', async () => {
    const one = modernTasksClient(http.url, { clientName: 'modern-agent' });
    const args = { release: 'v2-plain' };
    const first = one.call('plain-1', 'deploy', args, { tasks: false });
    await vi.waitFor(() => expect(ranTimes('v2-plain')).toBe(1), PATIENTLY);
    expect(idemOf((await one.call('plain-2', 'deploy', args, { tasks: false })).result)?.code).toBe(
      'IDEM_IN_FLIGHT',
    );
    gateOf('v2-plain').open();
    const answer = (await first).result;
    expect(answer?.resultType).toBe('complete');
    expect(answer).not.toHaveProperty('taskId');
    expect(textOf(answer)).toBe('deployed v2-plain');
    expect(ranTimes('v2-plain')).toBe(1);
  });

  it('2025-11-25 without params.task: the plain result', async () => {
    const client = await legacyClient();
    const first = client.callTool({ name: 'deploy', arguments: { release: 'v1-plain' } });
    await vi.waitFor(() => expect(ranTimes('v1-plain')).toBe(1), PATIENTLY);
    gateOf('v1-plain').open();
    const answer = (await first) as CallToolResult;
    expect(answer).not.toHaveProperty('task');
    expect(textOf(answer)).toBe('deployed v1-plain');
  });

  it('a tool that requires a task, called without: refused before anything runs (-32021 / -32601)', async () => {
    const one = modernTasksClient(http.url, { clientName: 'modern-agent' });
    const modern = await one.call('required-1', 'migrate', { release: 'req' }, { tasks: false });
    expect(modern.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
    const client = await legacyClient();
    await expect(client.callTool({ name: 'migrate', arguments: { release: 'req' } })).rejects.toMatchObject({
      code: -32601,
    });
    expect(ranTimes('req')).toBe(0);
    expect(await insideOf(idem).runtime.store.list({ tool: 'migrate' })).not.toContainEqual(
      expect.objectContaining({ arguments: { release: 'req' } }),
    );
  });
});

describe('a restart of the Idem (close, then open on the same data directory)', () => {
  it('tasks/get still answers, for both revisions', async () => {
    const one = modernTasksClient(http.url, { clientName: 'modern-agent' });
    gateOf('restart').open();
    const modernTask = createdTaskId(await one.call('restart-1', 'migrate', { release: 'restart' }));
    await untilTaskStatus(one, modernTask, 'completed');
    gateOf('restart-v1').open();
    const client = await legacyClient();
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'migrate', arguments: { release: 'restart-v1' }, task: {} } },
      CreateTaskResultSchema,
    );
    await vi.waitFor(
      async () => expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed'),
      PATIENTLY,
    );

    await stop();
    await start();

    const after = modernTasksClient(http.url, { clientName: 'modern-agent' });
    const done = await after.get(modernTask);
    expect(done.result?.status).toBe('completed');
    expect(textOf(done.result?.result)).toBe('deployed restart');
    const legacy = await legacyClient();
    expect((await legacy.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    const result = await legacy.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textOf(result)).toBe('deployed restart-v1');
    expect(ranTimes('restart')).toBe(1);
    expect(ranTimes('restart-v1')).toBe(1);
  });
});

describe('an HTTP action tool (idem.httpTool), served by idem.connect', () => {
  it('task: required: a 2025-11-25 client gets a task, and tasks/result the answer of the one request sent', async () => {
    let requests = 0;
    const target = createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ refunded: true }));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => target.close(() => resolve())));
    const { port } = target.address() as AddressInfo;
    const server = new McpServer({ name: 'lib-tasks-http', version: '1.0.0' });
    idem.httpTool(server, 'refund', {
      description: 'Refund an order once.',
      inputSchema: { order_id: z.string() },
      contract: { replay: 'keyed', task: 'required' },
      http: {
        method: 'POST',
        url: `http://127.0.0.1:${port}/refunds`,
        body: { order_id: '{order_id}' },
        allow: { addresses: ['127.0.0.1'] },
      },
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const client = new Client({ name: 'legacy-agent', version: '1.0.0' });
    await client.connect(clientSide);
    closers.push(() => client.close());
    expect((await client.listTools()).tools.find((t) => t.name === 'refund')?.execution?.taskSupport).toBe(
      'required',
    );
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'refund', arguments: { order_id: 'r-1' }, task: {} } },
      CreateTaskResultSchema,
    );
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result)).toContain('refunded');
    expect(requests).toBe(1);
  });
});
