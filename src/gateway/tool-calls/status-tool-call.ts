import { actionCall, callerOf } from '../../dispatch/action-call.js';
import { IDEM_CODES } from '../../errors.js';
import { idemAnswer } from '../../executions/answers.js';
import type { Caller, Rerun } from '../../executions/call.js';
import { parseStatusArguments } from '../../executions/status-tool.js';
import type { ToolCallRequest } from '../../protocol/tool-call-request.js';
import { approverFor } from '../sessions/elicitation.js';
import type { CallContext, ForwardedRequest, ToolCallAnswer } from './call-context.js';
import { callerParts, upstreamChannel, upstreamHeaders } from './tool-call.js';

/** A call of Idem's status tool (session.ts routes it by name): an execution's status, or `action: "repeat"`. */
export async function callStatusTool(ctx: CallContext, call: ToolCallRequest): Promise<ToolCallAnswer> {
  const parsed = parseStatusArguments(call.arguments);
  if ('problem' in parsed)
    return { result: idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: parsed.problem }) };
  if (parsed.action === 'repeat') return repeat(ctx, call, parsed.ref);
  return { result: await ctx.engine.status(parsed.ref, ctx.actor) };
}

/**
 * The status tool's `action: "repeat"`: the engine decides whether `ref` may
 * run again; this session runs it through its own upstream connection, as
 * the tool call it was, under this status request's id (so progress and
 * cancellation follow it).
 */
async function repeat(ctx: CallContext, call: ToolCallRequest, ref: string): Promise<ToolCallAnswer> {
  const forwarded = ctx.session.track(call.id, '', call.meta, true);
  try {
    const caller = callerOf(callerParts(ctx, call, ctx.session.statusTool));
    const result = await ctx.engine.repeat(ref, caller, (remembered) =>
      planRepeat(ctx, call, remembered, caller, forwarded),
    );
    return ctx.revision.answer(ctx, result, forwarded);
  } finally {
    ctx.session.untrack(call.id);
  }
}

/** How the remembered call runs again here: on the channel of the tool as this session knows it now. */
async function planRepeat(
  ctx: CallContext,
  call: ToolCallRequest,
  remembered: Parameters<Rerun>[0],
  caller: Caller,
  forwarded: ForwardedRequest,
): ReturnType<Rerun> {
  const { entry } = await ctx.catalog.lookUp(remembered.tool);
  if (!entry) return undefined;
  // The front checked the status tool's scopes, not those of the tool it would run again.
  const missing = ctx.session.scopesMissing(call.authInfo, entry.name);
  if (missing.length > 0) {
    return {
      answer: idemAnswer(IDEM_CODES.IDEM_INSUFFICIENT_SCOPE, {
        detail: `Repeating ${entry.name} needs the scope ${missing.join(' ')}.`,
      }),
    };
  }
  const args = remembered.arguments as Record<string, unknown>;
  if (entry.action)
    return actionCall(
      entry.name,
      entry.action.channel,
      entry.contract,
      args,
      caller,
      forwarded.cancelled?.signal,
    );
  const upstream = ctx.upstreams.get(entry.upstream);
  if (!upstream?.available) {
    try {
      await upstream?.whenReady(ctx.session.upstreamWaitMs);
    } catch {
      return {
        answer: idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
          detail: `The upstream "${entry.upstream}" is down (restarting); nothing was repeated.`,
        }),
      };
    }
  }
  forwarded.upstream = entry.upstream;
  const params = call.meta ? { _meta: call.meta } : {};
  const channel = upstreamChannel(ctx, entry, params, upstreamHeaders(entry, args), forwarded);
  const { call: toolCall, dispatch } = actionCall(
    entry.name,
    channel,
    entry.contract,
    args,
    caller,
    forwarded.cancelled?.signal,
  );
  return {
    call: { ...toolCall, ...approverFor(ctx.session, ctx.actor, forwarded, entry.contract) },
    dispatch,
  };
}
