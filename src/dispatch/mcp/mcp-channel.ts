import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import {
  NotDispatchedError,
  OutcomeUnknownError,
  UpstreamClosedError,
  UpstreamUnavailableError,
} from '../../errors.js';
import { META } from '../../executions/answers.js';
import {
  HEADER_MISMATCH,
  isInputRequired,
  MISSING_REQUIRED_CLIENT_CAPABILITY,
  UNSUPPORTED_PROTOCOL_VERSION,
} from '../../protocol/revisions.js';
import type { ToolResult } from '../../store/outcome.js';
import type { ActionChannel, ActionDispatch } from '../channel.js';
import type { UpstreamConnection } from './upstream.js';
import type { UpstreamReply } from './upstream-spec.js';

/** Where a JSON-RPC error from an upstream travels inside a stored tool result, to be sent on as that error. */
export const JSONRPC_ERROR_META = META.jsonrpcError;

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
  /** The rest of the request's params, passed on as they came. */
  params: Record<string, unknown>;
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
 * error → unknown.
 */
export class McpChannel implements ActionChannel {
  readonly kind = 'mcp';
  readonly method = 'tools/call';
  readonly credential = null;
  readonly target: string;
  readonly unresolved?: string;
  readonly #call: McpToolCall;

  constructor(call: McpToolCall) {
    this.#call = call;
    this.target = call.upstreamName;
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
    const resend: ResendWith = (round) => this.#send(upstream, args, ctx.executionId, round);
    const first = await resend({});
    const reply = this.#call.answerRounds ? await this.#call.answerRounds(first, resend) : first;
    return this.#outcome(reply);
  }

  async #send(
    upstream: UpstreamConnection,
    args: Record<string, unknown>,
    executionId: string | null,
    round: Record<string, unknown>,
  ): Promise<UpstreamReply> {
    const call = this.#call;
    try {
      return await upstream.request(
        'tools/call',
        {
          ...call.params,
          ...round,
          name: call.upstreamTool,
          arguments: args,
          _meta: { ...call.meta, [META.executionId]: executionId },
        },
        // The caller's cancellation reaches the upstream through `onSent`'s id, as any request's does.
        undefined,
        call.onSent,
        call.headers,
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
