import type { CallToolResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { JSONRPC_ERROR_META, type UpstreamReply } from '../../dispatch/mcp/index.js';
import { taskOf } from '../../executions/tasks.js';
import { checkParamHeaders, paramHeadersOf } from '../../protocol/param-headers.js';
import { legacyResult, modernResult } from '../../protocol/revisions.js';
import { answerTaskRequest, createTaskResult, taskRequestOf } from '../../protocol/task-requests.js';
import { WAIT_ENDED } from '../../protocol/task-result-wait.js';
import type { ToolCallRequest } from '../../protocol/tool-call-request.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import { notifyTaskStatusV1 } from '../tasks/task-notifications.js';
import {
  type CallContext,
  type CallSession,
  type ClientRevision,
  type ForwardedRequest,
  NO_ANSWER,
  type RevisionCall,
  type ToolCallAnswer,
} from '../tool-calls/call-context.js';
import { roundOf } from './input-round.js';
import { withLegacyClientAnswers } from './input-rounds.js';

/**
 * What differs between the two MCP generations, for a client of each: one value per session,
 * set when its first request says which it speaks (session.ts). Where a client of one
 * generation meets an upstream of the other, the input a tool asks for mid-call crosses between
 * them (input-rounds.ts): a 2026-07-28 client answers a 2025-era upstream's questions in rounds
 * of calls; a 2025-era client with a session is asked a 2026-07-28 upstream's `input_required`.
 */

/** 2025-era clients: `initialize`, a session, `params.task` (2025-11-25 tasks). */
class LegacyRevision implements ClientRevision {
  readCall(call: ToolCallRequest, entry: CatalogEntry): RevisionCall {
    return { task: taskRequestOf(false, call.request.params, entry.contract.task, call.name) };
  }

  answerRounds(
    session: CallSession,
    first: UpstreamReply,
    resend: (round: Record<string, unknown>) => Promise<UpstreamReply>,
    forwarded: ForwardedRequest,
    timeoutMs: number,
  ): Promise<UpstreamReply> {
    // The client is asked what a 2026-07-28 upstream needs, and the call is re-issued with the
    // answers: the same execution, since the upstream has not acted yet.
    return withLegacyClientAnswers(session, first, resend, forwarded, timeoutMs);
  }

  inputRequired(forwarded: ForwardedRequest, result: Record<string, unknown>): string {
    forwarded.inputRequired = result;
    return 'The upstream asks for more input before it acts (a 2026-07-28 multi-round-trip request), which a 2025-era client without a session (the stateless front) cannot give. Nothing was executed.';
  }

  answer(ctx: CallContext, result: CallToolResult, forwarded: ForwardedRequest): ToolCallAnswer {
    if (forwarded.cancelled?.signal.aborted) return NO_ANSWER;
    const task = taskOf(result);
    if (!task) return answerOf(result);
    // The session that made the task hears of its status changes from now on.
    notifyTaskStatusV1(ctx, task);
    return { result: createTaskResult(false, task) };
  }

  async answerTaskRequest(ctx: CallContext, request: JSONRPCRequest): Promise<ToolCallAnswer> {
    // A 2025-11-25 `tasks/result` waits as long as its request lives: tracked like a tool call, so
    // `notifications/cancelled` ends it, and so does the session's close.
    if (request.method !== 'tasks/result') return answerTasks(ctx, request, false, ctx.session.ended);
    const cancelled = ctx.session.track(request.id, '', undefined, true).cancelled as AbortController;
    try {
      return await answerTasks(ctx, request, false, AbortSignal.any([cancelled.signal, ctx.session.ended]));
    } finally {
      ctx.session.untrack(request.id);
    }
  }

  result(_method: string | undefined, result: Record<string, unknown>): Record<string, unknown> {
    // Its upstream may speak 2026-07-28: what only that revision says is left out.
    return legacyResult(result);
  }

  hears(): boolean {
    return true;
  }
}

/** 2026-07-28 clients: no handshake, the envelope on each request, the tasks extension, `input_required`. */
class ModernRevision implements ClientRevision {
  readCall(call: ToolCallRequest, entry: CatalogEntry, ctx: CallContext): RevisionCall {
    // SEP-2243: over HTTP a call mirrors the arguments its tool marks into headers, and a
    // disagreement is refused before anything is recorded or run.
    const headers = call.headers;
    const mismatch =
      headers &&
      checkParamHeaders(paramHeadersOf(entry.tool.inputSchema), call.arguments, (h) => {
        const value = headers[h];
        return Array.isArray(value) ? value.join(', ') : value;
      });
    if (mismatch) return { refused: { error: mismatch }, task: {} };
    const task = taskRequestOf(true, call.request.params, entry.contract.task, call.name);
    // On the shared connections, a 2025-era upstream's questions reach this client in rounds.
    const rounds = ctx.session.rounds;
    if (!rounds) return { task };
    return { task, ...roundOf(rounds, call, ctx.actor, ctx.upstreams.get(entry.upstream)) };
  }

  async answerRounds(_session: CallSession, first: UpstreamReply): Promise<UpstreamReply> {
    // Its client answers an `input_required` itself, by calling again (inputRequired, answer).
    return first;
  }

  inputRequired(forwarded: ForwardedRequest, result: Record<string, unknown>): string {
    forwarded.inputRequired = result;
    return 'The upstream asks for more input before it acts.';
  }

  answer(_ctx: CallContext, result: CallToolResult, forwarded: ForwardedRequest): ToolCallAnswer {
    if (forwarded.cancelled?.signal.aborted) return NO_ANSWER;
    const task = taskOf(result);
    if (task) return { result: createTaskResult(true, task) };
    // The upstream's own `input_required`, as it is: the client answers it by calling again.
    if (forwarded.inputRequired) return { result: forwarded.inputRequired };
    return answerOf(result);
  }

  answerTaskRequest(ctx: CallContext, request: JSONRPCRequest): Promise<ToolCallAnswer> {
    return answerTasks(ctx, request, true, ctx.session.ended);
  }

  result(method: string | undefined, result: Record<string, unknown>): Record<string, unknown> {
    return modernResult(method, result);
  }

  hears(level: unknown, threshold: string | undefined): boolean {
    // A request gets log messages only at the level it asked for (absent: none).
    if (threshold === undefined) return false;
    return LOG_LEVELS.indexOf(String(level)) >= Math.max(0, LOG_LEVELS.indexOf(threshold));
  }
}

export const LEGACY: ClientRevision = new LegacyRevision();
export const MODERN: ClientRevision = new ModernRevision();

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** A tool's result as the client gets it. */
function answerOf(result: CallToolResult): ToolCallAnswer {
  // An upstream's JSON-RPC error, carried through the engine inside the result: it goes back as that error.
  const error = result._meta?.[JSONRPC_ERROR_META] as
    | { code: number; message: string; data?: unknown }
    | undefined;
  if (error) return { error };
  return { result };
}

/** A client's `tasks/*` request, answered from the store by the rules of protocol/task-requests.ts. */
async function answerTasks(
  ctx: CallContext,
  request: JSONRPCRequest,
  modern: boolean,
  ended: AbortSignal,
): Promise<ToolCallAnswer> {
  const reply = await answerTaskRequest(
    ctx.engine,
    { modern, actor: ctx.actor, ended },
    request.method,
    request.params,
  );
  // A cancelled request gets no response (the client said it will not use one).
  return reply === WAIT_ENDED ? NO_ANSWER : reply;
}
