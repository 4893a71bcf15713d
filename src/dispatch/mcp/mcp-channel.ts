import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { CONTRACT_DEFAULTS } from '../../defaults.js';
import {
  NotDispatchedError,
  OutcomeUnknownError,
  UpstreamClosedError,
  UpstreamUnavailableError,
} from '../../errors.js';
import { META } from '../../executions/answers.js';
import {
  envelopeOf,
  HEADER_MISMATCH,
  isInputRequired,
  MISSING_REQUIRED_CLIENT_CAPABILITY,
  UNSUPPORTED_PROTOCOL_VERSION,
} from '../../protocol/revisions.js';
import type { ToolResult } from '../../store/outcome.js';
import type { ActionChannel, ActionDispatch } from '../channel.js';
import type { UpstreamConnection } from './upstream.js';
import type { RequestOptions, UpstreamReply } from './upstream-spec.js';
import {
  type CreatedTask,
  createdTaskOf,
  declaringTasks,
  followUpstreamTask,
  taskEndResult,
} from './upstream-task.js';

/** Where a JSON-RPC error from an upstream travels inside a stored tool result, to be sent on as that error. */
export const JSONRPC_ERROR_META = META.jsonrpcError;

/** How many rounds of input a task's call may take before the gateway gives up (the v2 SDK's default). */
const MAX_TASK_INPUT_ROUNDS = 10;

/** JSON-RPC codes meaning the upstream refused the request before running it. */
const REFUSED_BEFORE_RUNNING = new Set([
  -32600,
  -32601,
  -32602,
  // 2026-07-28: a header, a client capability or the revision refused before the tool ran.
  HEADER_MISMATCH,
  MISSING_REQUIRED_CLIENT_CAPABILITY,
  UNSUPPORTED_PROTOCOL_VERSION,
]);

/** A re-send of a `tools/call` with the answers to a round of input the upstream asked for. */
export type ResendWith = (round: Record<string, unknown>) => Promise<UpstreamReply>;

/** One `tools/call` of one upstream MCP server's tool, as the caller's session makes it. */
export interface McpToolCall {
  /** The tool as the caller named it (the gateway may list an upstream's tools under a prefix). */
  name: string;
  /** The tool's own name on the upstream. */
  upstreamTool: string;
  /** The upstream's name as configured: where the effect lands, as recorded. */
  upstreamName: string;
  /** The connection to it; undefined when the caller's session knows no such upstream. */
  upstream: UpstreamConnection | undefined;
  /** The rest of the request's params, passed on as they came (but a client's `task`: see below). */
  params: Record<string, unknown>;
  /**
   * What the upstream listed as the tool's `execution.taskSupport`: 'required' → the call is sent
   * task-augmented and the upstream's task followed. A client's own `task` param is never passed
   * on: a task the upstream makes is Idem's to follow, not the client's.
   */
  upstreamTaskSupport?: 'optional' | 'required';
  /**
   * The contract's timeout: the `ttl` asked of an upstream's task, and how long a task that waits
   * for input is followed (the engine answers the caller by then; a working task is followed on).
   */
  timeoutMs?: number;
  /** The `_meta` passed on, beside the execution id. */
  meta: Record<string, unknown> | undefined;
  /** Headers of this request's own POST, for an HTTP upstream (SEP-2243 `Mcp-Param-*`). */
  headers?: Record<string, string>;
  /** How long a call waits for an upstream that is restarting before it is not executed. */
  waitMs: number;
  /** Called with the upstream-side id once sent, so a client's cancellation can be passed on. */
  onSent?(upstreamId: RequestId): void;
  /**
   * Reads the upstream's first reply: where the caller's client can answer
   * the rounds of input the upstream asks for in the middle of the call, it
   * does so and re-sends with `resend`, and returns the reply that ends them.
   */
  answerRounds?(first: UpstreamReply, resend: ResendWith): Promise<UpstreamReply>;
  /**
   * The upstream waits for input that only a new call can bring (a
   * 2026-07-28 `input_required` result): nothing was executed. Returns what
   * the caller is told.
   */
  inputRequired?(result: Record<string, unknown>): string;
  /**
   * Called as the dispatch begins; what it returns, when it ends (also after the engine answered
   * the caller, past the contract's timeout): the caller's session stays open while an upstream works.
   */
  onDispatch?(): () => void;
}

/**
 * A tool of an upstream MCP server as an action channel: the execution id
 * goes in `_meta` (an upstream built with the Idem library deduplicates on
 * it), and the upstream's answer is read into an outcome by what the
 * connection knows — never sent (the upstream was down) → not executed;
 * sent, then the upstream went away → unknown; a JSON-RPC error refusing the
 * request before it ran → a failure the target reported; any other JSON-RPC
 * error → unknown. An upstream that answers with a task of its own
 * (upstream-task.ts) has not answered yet: the task is followed to its end,
 * and how it ended is the outcome.
 */
export class McpChannel implements ActionChannel {
  readonly kind = 'mcp';
  readonly method = 'tools/call';
  readonly credential = null;
  readonly target: string;
  readonly server?: string;
  readonly unresolved?: string;
  readonly #call: McpToolCall;

  constructor(call: McpToolCall) {
    this.#call = call;
    this.target = call.upstreamName;
    // What the upstream is, as the gateway computed it from its spec (its command, or URL, and more).
    if (call.upstream?.server) this.server = call.upstream.server;
    // The ladder's "target unresolved" step, for an MCP tool: its upstream is not one this session knows.
    if (!call.upstream)
      this.unresolved = `the upstream "${call.upstreamName}" of ${call.name} is not configured`;
  }

  async dispatch(args: Record<string, unknown>, ctx: ActionDispatch): Promise<ToolResult> {
    const ended = this.#call.onDispatch?.();
    try {
      return await this.#dispatch(args, ctx);
    } finally {
      ended?.();
    }
  }

  async #dispatch(args: Record<string, unknown>, ctx: ActionDispatch): Promise<ToolResult> {
    const upstream = this.#call.upstream;
    if (!upstream) throw new NotDispatchedError(`The upstream "${this.target}" is not configured.`);
    // Waiting here, after the engine matched the call, lets a retry of an earlier call hear about
    // that call (unknown, completed) rather than "not executed" while the upstream restarts.
    if (!upstream.available) {
      await upstream.whenReady(this.#call.waitMs).catch(() => {
        throw new NotDispatchedError(`The upstream "${this.target}" is down (restarting).`);
      });
    }
    const startedAt = Date.now();
    const asking = this.#taskRequest(upstream);
    const resend: ResendWith = (round) => this.#send(upstream, args, round, asking, ctx);
    const first = await resend({});
    let reply = this.#call.answerRounds ? await this.#call.answerRounds(first, resend) : first;
    // The call is a task: what the upstream asks before it acts, the task's client answers.
    for (let round = 1; ctx.askInput && 'result' in reply && isInputRequired(reply.result); round++) {
      if (round > MAX_TASK_INPUT_ROUNDS)
        throw new NotDispatchedError(
          `The upstream asked for input ${MAX_TASK_INPUT_ROUNDS} times; nothing was executed.`,
        );
      const asked = reply.result as { inputRequests?: unknown; requestState?: unknown };
      const requests = (asked.inputRequests ?? {}) as Record<string, { method: string; params?: unknown }>;
      const inputResponses = await ctx.askInput(requests);
      if (!inputResponses) break;
      reply = await resend({
        inputResponses,
        ...(typeof asked.requestState === 'string' ? { requestState: asked.requestState } : {}),
      });
    }
    // Asked for or not, a task the upstream answers with is followed: its CreateTaskResult is no outcome.
    const task = 'result' in reply ? createdTaskOf(reply.result) : undefined;
    if (!task) return this.#outcome(reply);
    return this.#follow(upstream, task, ctx, startedAt, asking?.meta);
  }

  /**
   * How this call asks the upstream for a task, when its tool requires one: a 2025-era upstream
   * gets `task: { ttl }`, a 2026-07-28 one the extension declared in the request's own client
   * capabilities (those it would have had, plus the extension). Undefined: asked as a plain call.
   */
  #taskRequest(
    upstream: UpstreamConnection,
  ): { params?: Record<string, unknown>; meta?: Record<string, unknown> } | undefined {
    const call = this.#call;
    if (call.upstreamTaskSupport !== 'required') return undefined;
    if (upstream.era !== 'modern')
      return { params: { task: call.timeoutMs !== undefined ? { ttl: call.timeoutMs } : {} } };
    const declared =
      envelopeOf({ _meta: call.meta }).clientCapabilities ?? upstream.client.capabilities ?? {};
    return { meta: declaringTasks(declared as Record<string, unknown>) };
  }

  /**
   * The upstream's task, recorded on the execution first (awaited: durable before it is followed),
   * then followed to its end; its result is the dispatch's result.
   */
  async #follow(
    upstream: UpstreamConnection,
    task: CreatedTask,
    ctx: ActionDispatch,
    startedAt: number,
    meta: Record<string, unknown> | undefined,
  ): Promise<ToolResult> {
    const handle = {
      generation: task.generation,
      upstream: this.target,
      taskId: task.taskId,
      ...(task.pollIntervalMs !== undefined ? { pollIntervalMs: task.pollIntervalMs } : {}),
      createdAt: task.createdAt ?? Date.now(),
    };
    // Recording may fail; the task runs on the upstream either way, and only following it tells its outcome.
    await ctx.upstreamTask?.(handle).catch(() => undefined);
    const { timeoutMs } = this.#call;
    const end = await followUpstreamTask(upstream, task, {
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(timeoutMs !== undefined ? { inputDeadlineAt: startedAt + timeoutMs } : {}),
      ...(meta ? { meta } : {}),
    });
    return taskEndResult(end);
  }

  async #send(
    upstream: UpstreamConnection,
    args: Record<string, unknown>,
    round: Record<string, unknown>,
    asking: { params?: Record<string, unknown>; meta?: Record<string, unknown> } | undefined,
    ctx: ActionDispatch,
  ): Promise<UpstreamReply> {
    const call = this.#call;
    const { task: _clientsTask, ...passed } = call.params;
    try {
      return await upstream.request(
        'tools/call',
        {
          ...passed,
          ...asking?.params,
          ...round,
          name: call.upstreamTool,
          arguments: args,
          _meta: { ...call.meta, ...asking?.meta, [META.executionId]: ctx.executionId },
        },
        {
          // The caller's cancellation reaches the upstream through `onSent`'s id, as any request's does.
          ...(call.onSent ? { onId: call.onSent } : {}),
          ...(call.headers ? { headers: call.headers } : {}),
          ...taskRequestOptions(ctx, call.timeoutMs),
        },
      );
    } catch (error) {
      // Could not send: nothing reached the upstream. Sent, then the upstream went away: it may have acted.
      if (error instanceof UpstreamUnavailableError) throw new NotDispatchedError(error.message);
      if (error instanceof UpstreamClosedError) throw new OutcomeUnknownError(error.message);
      throw error;
    }
  }

  #outcome(reply: UpstreamReply): ToolResult {
    if ('result' in reply && isInputRequired(reply.result)) {
      // Not an outcome: the upstream has not acted yet and waits for the client's answers, which
      // come in a new call (with the same arguments: a new execution of the same intent, since this
      // one is retired as not executed).
      const result = reply.result as Record<string, unknown>;
      throw new NotDispatchedError(
        this.#call.inputRequired?.(result) ?? 'The upstream asks for more input before it acts.',
      );
    }
    if ('error' in reply) {
      if (!REFUSED_BEFORE_RUNNING.has(reply.error.code)) {
        throw new OutcomeUnknownError(
          `upstream answered with JSON-RPC error ${reply.error.code}: ${reply.error.message}`,
          reply.error,
        );
      }
      return {
        isError: true,
        content: [{ type: 'text', text: reply.error.message }],
        _meta: { [JSONRPC_ERROR_META]: reply.error },
      };
    }
    return reply.result as ToolResult;
  }
}

/**
 * What the call's task adds to its request (docs/tasks.md). Its cancel (tasks/cancel, by any
 * gateway of the fleet) is passed on as `notifications/cancelled`, and an answer the upstream
 * sends all the same is still the target's answer, awaited for the contract's timeout: it may
 * have acted, and the answer says how (over 2026-07-28 HTTP the cancel closes the request's
 * stream, and nothing can come: UpstreamConnection.request). Once the call is a 2026-07-28 task,
 * what the upstream asks while it runs (a 2025-era server pushing `elicitation/create`) is carried
 * into the task as its input.
 */
function taskRequestOptions(ctx: ActionDispatch, timeoutMs: number | undefined): RequestOptions {
  const { taskCancelled, askPushed } = ctx;
  return {
    ...(taskCancelled
      ? { signal: taskCancelled, answerWithinMs: timeoutMs ?? CONTRACT_DEFAULTS.timeoutMs }
      : {}),
    ...(askPushed
      ? {
          asks: (request) =>
            askPushed({ method: request.method, params: request.params })?.then(
              (reply): UpstreamReply => ({ jsonrpc: '2.0', id: request.id, ...reply }) as UpstreamReply,
            ),
        }
      : {}),
  };
}
