import { actionCall, callerOf } from '../../dispatch/action-call.js';
import type { UpstreamConnection } from '../../dispatch/mcp/index.js';
import { IDEM_CODES } from '../../errors.js';
import { idemAnswer } from '../../executions/answers.js';
import type { Caller, Rerun } from '../../executions/call.js';
import { parseStatusArguments } from '../../executions/status-tool.js';
import { renderRequestId } from '../../identity/request-key.js';
import { paramHeadersFor, paramHeadersOf } from '../../protocol/param-headers.js';
import { approverFor } from '../sessions/elicitation.js';
import type { ForwardedRequest, SessionState } from '../sessions/session-state.js';
import { lookUpTool } from '../sessions/tools-list.js';
import type { ToolCallAnswer } from './answer.js';
import { callerParts, upstreamChannel } from './engine-call.js';
import type { RevisionHooks } from './revision-hooks.js';
import type { ToolCallRequest } from './tool-call-request.js';

/** A call of Idem's status tool: an execution's status, or `action: "repeat"`. */
export async function callStatusTool(
  s: SessionState,
  call: ToolCallRequest,
  bridge: RevisionHooks,
): Promise<ToolCallAnswer> {
  const parsed = parseStatusArguments(call.arguments);
  if ('problem' in parsed)
    return { result: idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: parsed.problem }) };
  if (parsed.action === 'repeat') return repeat(s, call, parsed.ref, bridge);
  return { result: await s.ctx.engine.status(parsed.ref, s.actor()) };
}

/**
 * The status tool's `action: "repeat"`: the engine decides whether `ref` may
 * run again; this session runs it through its own upstream connection, as
 * the tool call it was, under this status request's id (so progress and
 * cancellation follow it).
 */
async function repeat(
  s: SessionState,
  call: ToolCallRequest,
  ref: string,
  bridge: RevisionHooks,
): Promise<ToolCallAnswer> {
  const forwarded = s.track(call.id, '', call.meta, true);
  try {
    const caller = callerOf(callerParts(s, call.id, s.ctx.statusTool, call.authInfo));
    const result = await s.ctx.engine.repeat(ref, caller, (remembered) =>
      planRepeat(s, call, remembered, caller, forwarded, bridge),
    );
    return bridge.answer(result, forwarded);
  } finally {
    s.inFlight.delete(renderRequestId(call.id));
  }
}

/** How the remembered call runs again here: on the channel of the tool as this session knows it now. */
async function planRepeat(
  s: SessionState,
  call: ToolCallRequest,
  remembered: Parameters<Rerun>[0],
  caller: Caller,
  forwarded: ForwardedRequest,
  bridge: RevisionHooks,
): ReturnType<Rerun> {
  const { entry } = await lookUpTool(s, remembered.tool);
  if (!entry) return undefined;
  // The front checked the status tool's scopes, not those of the tool it would run again.
  const missing = s.ctx.scopesMissing?.(call.authInfo, entry.name) ?? [];
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
  const upstream = s.upstreams.get(entry.upstream) as UpstreamConnection;
  if (!upstream.available) {
    try {
      await upstream.whenReady(s.ctx.upstreamWaitMs);
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
  const headers = paramHeadersFor(paramHeadersOf(entry.tool.inputSchema), args);
  const channel = upstreamChannel(
    s,
    entry,
    params,
    headers,
    forwarded,
    bridge.channelHooks(forwarded, entry),
  );
  const { call: toolCall, dispatch } = actionCall(
    entry.name,
    channel,
    entry.contract,
    args,
    caller,
    forwarded.cancelled?.signal,
  );
  return {
    call: { ...toolCall, ...approverFor(s, forwarded, entry.contract) },
    dispatch,
  };
}
