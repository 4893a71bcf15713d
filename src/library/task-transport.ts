import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { TaskPolicy } from '../contracts/contract.js';
import type { TaskRequest } from '../executions/call.js';
import { taskOf } from '../executions/tasks.js';
import type { CallerInfo } from '../identity/actor.js';
import { renderRequestId } from '../identity/request-key.js';
import { envelopeOf, hasEnvelope } from '../protocol/revisions.js';
import {
  answerTaskRequest,
  createTaskResult,
  TASK_METHODS,
  type TaskSource,
  taskRequestOf,
  tasksCapabilityV1,
} from '../protocol/task-requests.js';
import { WAIT_ENDED } from '../protocol/task-result-wait.js';
import type { AdmittingTransport } from '../receipts/receipt-transport.js';
import { WrappedTransport } from '../support/wrapped-transport.js';

export interface TaskTransportOptions {
  tasks: TaskSource;
  /** Who is calling: the function the tool handlers use. */
  actorOf: (info: CallerInfo) => string;
  /** The task policy of a tool Idem registered; undefined for any other tool, which is left alone. */
  policyOf(tool: string): TaskPolicy | undefined;
  /**
   * Where a call's task is handed to its handler, keyed by the request's `_meta` object: the SDK
   * passes that very object on as the handler's `extra._meta`, and nothing a client sends can
   * name an entry, so only a call this layer read can become a task.
   */
  requests: WeakMap<object, TaskRequest>;
}

/** What this layer does with the answer to a request it let through. */
type Pending = { kind: 'initialize' } | { kind: 'list' } | { kind: 'call'; modern: boolean };

/**
 * Idem's tasks for a server built on the SDK v1 (docs/tasks.md), at the message level, above the
 * receipts (so a resend is answered with the same task). The SDK's own experimental tasks do not
 * fit: a TaskStore of its own, a tool that is a task on every call or on none. Here the execution
 * is the task, in Idem's store, and the engine decides when a call becomes one (`task_after`):
 * - a `tools/call` of an Idem tool: its revision's task request is read (and a 2025-11-25
 *   `params.task` taken out, the SDK must not see it), a tool that requires a task refuses a
 *   client that cannot take one before anything runs, and an answer that is a task
 *   (`_meta[META.task]`) goes out as the CreateTaskResult of the client's revision;
 * - `tasks/*`: answered from the store for the caller's actor, never by the server;
 * - `initialize`: Idem's `capabilities.tasks`; `tools/list`: `execution.taskSupport` per contract.
 * The 2026-07-28 extension is advertised by the ModernBridge below (server/discover).
 */
export class TaskTransport extends WrappedTransport<AdmittingTransport> {
  readonly #options: TaskTransportOptions;
  readonly #pending = new Map<string, Pending>();
  /** The client as its first initialize named it (a 2026-07-28 request names it in its envelope). */
  #clientName: string | undefined;
  /** Aborted when the connection closes: a 2025-11-25 tasks/result waiting on it stops. */
  readonly #closed = new AbortController();

  constructor(inner: AdmittingTransport, options: TaskTransportOptions) {
    super(inner);
    this.#options = options;
    inner.onclose = () => {
      this.#closed.abort();
      this.#pending.clear();
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.#receive(message, extra);
  }

  admit(...args: Parameters<AdmittingTransport['admit']>): ReturnType<AdmittingTransport['admit']> {
    return this.inner.admit(...args);
  }

  abandon(id: RequestId): void {
    this.inner.abandon(id);
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const id = (message as { id?: RequestId }).id;
    const pending = id === undefined ? undefined : this.#pending.get(renderRequestId(id));
    if (!pending || !('result' in message || 'error' in message)) return this.inner.send(message, options);
    this.#pending.delete(renderRequestId(id as RequestId));
    if (!isJSONRPCResultResponse(message)) return this.inner.send(message, options);
    return this.inner.send({ ...message, result: this.#rendered(pending, message.result) }, options);
  }

  #rendered(pending: Pending, result: Record<string, unknown>): Record<string, unknown> {
    switch (pending.kind) {
      case 'initialize':
        // Idem's own tasks, in place of any the server declares: its tasks/* never reach the server.
        return {
          ...result,
          capabilities: { ...(result.capabilities as object), tasks: tasksCapabilityV1() },
        };
      case 'list':
        return {
          ...result,
          tools: (result.tools as unknown[] | undefined)?.map((tool) => this.#listed(tool)),
        };
      case 'call': {
        const view = taskOf(result as Parameters<typeof taskOf>[0]);
        return view ? createTaskResult(pending.modern, view) : result;
      }
    }
  }

  /** A listed tool of Idem's says whether its calls may be tasks, by its contract (as the gateway lists it). */
  #listed(tool: unknown): unknown {
    const listed = tool as { name?: unknown; execution?: object };
    const policy = typeof listed.name === 'string' ? this.#options.policyOf(listed.name) : undefined;
    if (policy === undefined || policy === 'off') return tool;
    return { ...listed, execution: { ...listed.execution, taskSupport: policy } };
  }

  #receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    if (!isJSONRPCRequest(message) || this.#closed.signal.aborted) {
      this.onmessage?.(message, extra);
      return;
    }
    if (TASK_METHODS.has(message.method)) {
      void this.#answerTasks(message, extra);
      return;
    }
    if (message.method === 'tools/call') {
      const passed = this.#call(message);
      if (passed) this.onmessage?.(passed, extra);
      return;
    }
    if (message.method === 'initialize') {
      const name = (message.params as { clientInfo?: { name?: unknown } } | undefined)?.clientInfo?.name;
      if (this.#clientName === undefined && typeof name === 'string') this.#clientName = name;
      this.#pending.set(renderRequestId(message.id), { kind: 'initialize' });
    }
    if (message.method === 'tools/list') this.#pending.set(renderRequestId(message.id), { kind: 'list' });
    this.onmessage?.(message, extra);
  }

  /**
   * A call of an Idem tool: whether it may become a task, said to its handler through its `_meta`;
   * the request as the server is to get it, or undefined when it is refused here.
   */
  #call(message: JSONRPCRequest): JSONRPCRequest | undefined {
    const params = (message.params ?? {}) as { name?: unknown; task?: unknown; _meta?: object };
    const policy = typeof params.name === 'string' ? this.#options.policyOf(params.name) : undefined;
    if (policy === undefined) return message;
    const modern = hasEnvelope(params);
    const decided = taskRequestOf(modern, params, policy, params.name as string);
    if ('refused' in decided) {
      void this.#reply(message.id, decided.refused);
      return undefined;
    }
    if (!decided.task && params.task === undefined) return message;
    // A fresh `_meta`, this call's own: the key its handler finds its task by.
    const { task: _asked, ...rest } = params;
    const meta = { ...params._meta };
    if (decided.task) {
      this.#options.requests.set(meta, decided.task);
      this.#pending.set(renderRequestId(message.id), { kind: 'call', modern });
    }
    return { ...message, params: { ...rest, _meta: meta } };
  }

  async #answerTasks(request: JSONRPCRequest, extra?: MessageExtraInfo): Promise<void> {
    const clientName = this.#clientName ?? envelopeOf(request.params).clientInfo?.name;
    const actor = this.#options.actorOf({
      ...(extra?.authInfo ? { authInfo: extra.authInfo } : {}),
      ...(typeof clientName === 'string' ? { clientName } : {}),
    });
    const asker = { modern: hasEnvelope(request.params), actor, ended: this.#closed.signal };
    let reply: Awaited<ReturnType<typeof answerTaskRequest>>;
    try {
      reply = await answerTaskRequest(this.#options.tasks, asker, request.method, request.params);
    } catch (error) {
      // The store could not answer: say so, the task is not known to be anything.
      reply = { error: { code: -32603, message: `The task could not be read: ${String(error)}` } };
    }
    // The connection closed while it waited: there is no one to answer.
    if (reply !== WAIT_ENDED) await this.#reply(request.id, reply);
  }

  async #reply(
    id: RequestId,
    reply: { result: Record<string, unknown> } | { error: { code: number; message: string } },
  ): Promise<void> {
    const message = { jsonrpc: '2.0' as const, id, ...reply } as JSONRPCMessage;
    try {
      await this.inner.send(message, { relatedRequestId: id });
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
