/**
 * A 2026-07-28 client over raw HTTP for the tasks tests: every request carries its own envelope
 * (protocol version, client info, client capabilities) and the standard headers, and declares the
 * tasks extension in its own `_meta` unless told not to — so a test decides, request by request,
 * whether a call may become a task. Replies are the JSON-RPC messages as the gateway sent them.
 */
import { expect, vi } from 'vitest';
import { ENVELOPE } from '../../src/protocol/revisions.js';
import { TASKS_EXTENSION } from '../../src/protocol/tasks.js';
import { MCP_HEADERS, messagesOf, rawRequest } from './raw-http.js';
import { PATIENTLY } from './wait.js';

/** A JSON-RPC reply: the result or the error of one request. */
export interface Reply {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface ModernTasksClient {
  /**
   * `tools/call`; `tasks: false` leaves the extension undeclared (a client that cannot take a task);
   * `elicitation` declares form elicitation (a client whose user can be asked).
   */
  call(id: string, tool: string, args: Record<string, unknown>, options?: CallOptions): Promise<Reply>;
  get(taskId: string): Promise<Reply>;
  cancel(taskId: string): Promise<Reply>;
  /** `tasks/update` with the answers to what the task asks, by key. */
  update(taskId: string, inputResponses: Record<string, unknown>): Promise<Reply>;
}

/**
 * How a `tools/call` is made: `tasks: false` leaves the extension undeclared (a client that cannot
 * take a task); `elicitation` declares form elicitation (a client whose user can be asked);
 * `params` and `meta` add members to the request's params and its `_meta` (what a client may send
 * besides: a legacy `task`, a key of Idem's own).
 */
export interface CallOptions {
  tasks?: boolean;
  elicitation?: boolean;
  params?: Record<string, unknown>;
  meta?: Record<string, unknown>;
}

export function modernTasksClient(
  url: string,
  { clientName = 'modern-tasks-agent', token }: { clientName?: string; token?: string } = {},
): ModernTasksClient {
  let requests = 0;
  const send = async (
    id: string,
    method: string,
    name: string,
    params: Record<string, unknown>,
    tasks: boolean,
    elicitation = false,
    extraMeta: Record<string, unknown> = {},
  ): Promise<Reply> => {
    const meta = {
      ...extraMeta,
      [ENVELOPE.protocolVersion]: '2026-07-28',
      [ENVELOPE.clientInfo]: { name: clientName, version: '1.0.0' },
      [ENVELOPE.clientCapabilities]: {
        ...(tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
        ...(elicitation ? { elicitation: { form: {} } } : {}),
      },
    };
    const response = await rawRequest(url, {
      headers: {
        ...MCP_HEADERS,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        'mcp-name': name,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
    });
    const reply = messagesOf(response).find((m) => m.id === id);
    if (!reply) throw new Error(`no reply to ${method} ${id}: ${response.status} ${response.text}`);
    return reply as Reply;
  };
  const taskRequest = (method: string, taskId: string, more: Record<string, unknown> = {}) =>
    send(`${method}-${++requests}`, method, taskId, { taskId, ...more }, true);
  return {
    call: (id, tool, args, { tasks = true, elicitation = false, params = {}, meta = {} } = {}) =>
      send(id, 'tools/call', tool, { ...params, name: tool, arguments: args }, tasks, elicitation, meta),
    get: (taskId) => taskRequest('tasks/get', taskId),
    cancel: (taskId) => taskRequest('tasks/cancel', taskId),
    update: (taskId, inputResponses) => taskRequest('tasks/update', taskId, { inputResponses }),
  };
}

/** The task id of a reply that is a CreateTaskResult; throws with the reply otherwise. */
export function createdTaskId(reply: Reply): string {
  const result = reply.result;
  if (result?.resultType !== 'task' || typeof result.taskId !== 'string')
    throw new Error(`not a CreateTaskResult: ${JSON.stringify(reply)}`);
  return result.taskId;
}

/** Asks `tasks/get` until the task reads `status`; its last answer. */
export async function untilTaskStatus(
  client: ModernTasksClient,
  taskId: string,
  status: string,
): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> | undefined;
  await vi.waitFor(async () => {
    last = (await client.get(taskId)).result;
    expect(last?.status).toBe(status);
  }, PATIENTLY);
  return last as Record<string, unknown>;
}
