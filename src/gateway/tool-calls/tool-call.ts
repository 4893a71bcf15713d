import { actionCall, callerOf, refusedArguments } from '../../dispatch/action-call.js';
import type { ActionChannel } from '../../dispatch/channel.js';
import { McpChannel, type McpToolCall } from '../../dispatch/mcp/index.js';
import { IDEM_CODES } from '../../errors.js';
import { idemAnswer } from '../../executions/answers.js';
import { paramHeadersFor, paramHeadersOf } from '../../protocol/param-headers.js';
import type { ToolCallRequest } from '../../protocol/tool-call-request.js';
import { metaForUpstream } from '../../protocol/upstream-params.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import { answerInRound, continueRound } from '../revisions/input-rounds.js';
import { approverFor } from '../sessions/elicitation.js';
import type { CallContext, ForwardedRequest, RevisionCall, ToolCallAnswer } from './call-context.js';

/**
 * One `tools/call` of any tool but Idem's status tool, from the session's dispatch to its answer:
 * the fixed sequence, in one place (docs/architecture.md, "One effectful tools/call"). The tool
 * the call names → the request against the client's revision's rules → a read-only tool passed
 * through → the arguments checked → a call that continues an input round handed to it → the task
 * request → the channel call → `engine.execute` → the answer, shaped for the client's revision.
 * Each step returns the answer or lets the next one run; none calls back into what called it,
 * and the proxy core (session.ts) sends the answer.
 */
export async function callTool(ctx: CallContext, call: ToolCallRequest): Promise<ToolCallAnswer> {
  const found = await toolOf(ctx, call);
  if ('refused' in found) return found.refused;
  const { entry } = found;
  const read = ctx.revision.readCall(call, entry, ctx);
  if (read.refused) return read.refused;
  if (passesThrough(entry)) return passThrough(call, entry);
  const checked = checkArguments(call, entry);
  if ('refused' in checked) return checked.refused;
  if (read.continues) return continueRound(ctx, call, read.continues);
  if ('refused' in read.task) return read.task.refused;
  return execute(ctx, call, entry, checked.args, read);
}

type Refused = { refused: ToolCallAnswer };

/** The tool the call names, or why it cannot be called now (nothing is recorded or run then). */
async function toolOf(ctx: CallContext, call: ToolCallRequest): Promise<{ entry: CatalogEntry } | Refused> {
  const { entry, unlisted, fault } = await ctx.catalog.lookUp(call.name);
  if (fault) {
    return refusal(IDEM_CODES.IDEM_DENIED, {
      detail: `The gateway's config has an error, and it runs no tool until that is fixed: ${fault.message}`,
    });
  }
  if (!entry && unlisted.length > 0) {
    // The tool may belong to an upstream that is restarting: "Unknown tool" would tell a model it does not exist.
    return refusal(IDEM_CODES.IDEM_NOT_EXECUTED, {
      detail: `The tools of upstream ${unlisted.map((u) => `"${u}"`).join(', ')} could not be listed: it is down (restarting).`,
    });
  }
  if (!entry) return { refused: { error: { code: -32602, message: `Unknown tool: ${call.name}` } } };
  return { entry };
}

/** A read-only tool of an upstream: nothing to identify or record, so it is forwarded as it came. */
function passesThrough(entry: CatalogEntry): boolean {
  return entry.contract.replay === 'read_only' && !entry.action;
}

function passThrough(call: ToolCallRequest, entry: CatalogEntry): ToolCallAnswer {
  const { request } = call;
  const params = { ...request.params, name: entry.upstreamName };
  return {
    forward: {
      request: { ...request, params },
      upstream: entry.upstream,
      headers: upstreamHeaders(entry, call.arguments),
    },
  };
}

/** The call's arguments, as the engine will identify them, or why they cannot be. */
function checkArguments(
  call: ToolCallRequest,
  entry: CatalogEntry,
): { args: Record<string, unknown> } | Refused {
  let args: Record<string, unknown>;
  try {
    args = structuredClone(call.arguments ?? {}) as Record<string, unknown>;
  } catch {
    // Nesting deep enough to overflow the stack (JSON.parse accepts it): not an action anyone can identify.
    return refusal(IDEM_CODES.IDEM_INVALID_INPUT, {
      detail: `Invalid arguments for ${call.name}: nested too deeply to process.`,
    });
  }
  if (entry.validate && !entry.validate(args)) {
    const why = entry.validate.errors
      ?.map((e) => `${e.instancePath || '(arguments)'} ${e.message}`)
      .join('; ');
    return refusal(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `Invalid arguments for ${call.name}: ${why}.` });
  }
  return { args };
}

/**
 * An effectful call through the engine, an upstream's tool or one that HTTP or SSH performs: the
 * request tracked in flight (cancellable until answered), its approver, its channel, the call and
 * its caller built once (dispatch/action-call.ts); the engine claims, runs and records it.
 */
async function execute(
  ctx: CallContext,
  call: ToolCallRequest,
  entry: CatalogEntry,
  args: Record<string, unknown>,
  { task, round }: RevisionCall,
): Promise<ToolCallAnswer> {
  const forwarded = ctx.session.track(call.id, entry.upstream, call.meta, true);
  try {
    const approver = approverFor(ctx.session, ctx.actor, forwarded, entry.contract);
    const channel =
      entry.action?.channel ??
      upstreamChannel(ctx, entry, paramsOf(call), upstreamHeaders(entry, call.arguments), forwarded);
    // What the channel could never carry (an SSH argument with a NUL byte) is refused before anything is claimed.
    const refused = refusedArguments(channel, args);
    if (refused) return { result: refused };
    const caller = callerOf(callerParts(ctx, call, call.name));
    const prepared = actionCall(
      call.name,
      channel,
      entry.contract,
      args,
      caller,
      forwarded.cancelled?.signal,
    );
    // While an input round holds questions for its client, the call must not become a task.
    const asked =
      'task' in task && task.task ? { task: round ? { ...task.task, hold: round.hold } : task.task } : {};
    const execution = ctx.engine.execute({ ...prepared.call, ...approver, ...asked }, prepared.dispatch);
    // Awaited here: the request stays in flight (cancellable) until it is answered.
    if (round) return await answerInRound(ctx, round, execution, forwarded);
    return ctx.revision.answer(ctx, await execution, forwarded);
  } finally {
    ctx.session.untrack(call.id);
  }
}

function paramsOf(call: ToolCallRequest): { _meta?: Record<string, unknown> } {
  return (call.request.params ?? {}) as { _meta?: Record<string, unknown> };
}

/** A 2026-07-28 HTTP upstream checks the `Mcp-Param-*` headers against the arguments (SEP-2243), whoever the client is. */
export function upstreamHeaders(entry: CatalogEntry, args: unknown): Record<string, string> | undefined {
  return paramHeadersFor(paramHeadersOf(entry.tool.inputSchema), args);
}

/** Who is calling, as the engine's caller is built from it (dispatch/action-call.ts `callerOf`). */
export function callerParts(ctx: CallContext, call: ToolCallRequest, tool: string) {
  return { actor: ctx.actor, session: ctx.session.id, requestId: call.id, tool, authInfo: call.authInfo };
}

/**
 * A call of an upstream's tool as this session makes it: its progress token and the client's
 * cancellation passed on, its `Mcp-Param-*` headers, and the input the upstream may ask for
 * answered as the client's revision says (asked by the channel, while it dispatches).
 */
export function upstreamChannel(
  ctx: CallContext,
  entry: CatalogEntry,
  /** The rest of the request's params, passed on as they came. */
  params: { _meta?: Record<string, unknown> },
  headers: Record<string, string> | undefined,
  forwarded: ForwardedRequest,
): ActionChannel {
  return new McpChannel({
    name: entry.name,
    upstreamTool: entry.upstreamName,
    upstreamName: entry.upstream,
    upstream: ctx.upstreams.get(entry.upstream),
    params,
    upstreamTaskSupport: taskSupportOf(entry),
    timeoutMs: entry.contract.timeoutMs,
    // Nothing the gateway answers itself goes on: protocol/upstream-params.ts.
    meta: metaForUpstream(forwarded.upstreamMeta),
    headers,
    waitMs: ctx.session.upstreamWaitMs,
    onSent: (upstreamId) => {
      forwarded.upstreamId = upstreamId;
    },
    // Counted until the upstream answers, even when the engine answered the caller first (timeout).
    onDispatch: () => ctx.session.dispatching(),
    answerRounds: async (first, resend) => {
      const reply = await ctx.revision.answerRounds(
        ctx.session,
        first,
        resend,
        forwarded,
        entry.contract.attachWindowMs,
      );
      forwarded.upstreamId = undefined;
      return reply;
    },
    inputRequired: (result) => ctx.revision.inputRequired(forwarded, result),
  });
}

/** What the upstream listed as the tool's `execution.taskSupport`, where it supports tasks at all. */
function taskSupportOf(entry: CatalogEntry): McpToolCall['upstreamTaskSupport'] {
  const support = entry.tool.execution?.taskSupport;
  return support === 'optional' || support === 'required' ? support : undefined;
}

function refusal(code: Parameters<typeof idemAnswer>[0], detail: Parameters<typeof idemAnswer>[1]): Refused {
  return { refused: { result: idemAnswer(code, detail) } };
}
