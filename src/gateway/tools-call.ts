import type {
  CallToolResult,
  JSONRPCRequest,
  MessageExtraInfo,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { actionCall, callerOf, refusedArguments } from '../dispatch/action-call.js';
import type { ActionChannel } from '../dispatch/channel.js';
import { JSONRPC_ERROR_META, McpChannel, type UpstreamConnection } from '../dispatch/mcp/index.js';
import { IDEM_CODES } from '../errors.js';
import { idemAnswer } from '../executions/answers.js';
import type { Approver, Dispatch } from '../executions/call.js';
import { parseStatusArguments } from '../executions/status-tool.js';
import { renderRequestId } from '../identity/request-key.js';
import { checkParamHeaders, paramHeadersFor, paramHeadersOf } from '../protocol/param-headers.js';
import type { CatalogEntry } from './catalog.js';
import { elicitationApprover } from './elicitation.js';
import { forward } from './forwarding.js';
import {
  continueRound,
  openRound,
  replyFromRound,
  roundContinued,
  withLegacyClientAnswers,
} from './input-rounds.js';
import type { ForwardedRequest, SessionState } from './session-state.js';
import { lookUpTool } from './tools-list.js';

export async function toolsCall(
  s: SessionState,
  request: JSONRPCRequest,
  extra?: MessageExtraInfo,
): Promise<void> {
  const params = (request.params ?? {}) as {
    name?: unknown;
    arguments?: unknown;
    _meta?: Record<string, unknown>;
    /** 2026-07-28: the answers to an `input_required` round, and the state it named. */
    inputResponses?: unknown;
    requestState?: unknown;
  };
  const name = typeof params.name === 'string' ? params.name : '';
  if (name === s.ctx.statusTool) {
    const parsed = parseStatusArguments(params.arguments);
    if ('problem' in parsed)
      return s.reply(request.id, idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: parsed.problem }));
    const { ref, action } = parsed;
    if (action === 'repeat') return repeat(s, request, ref, params._meta, extra);
    return s.reply(request.id, await s.ctx.engine.status(ref, s.actor()));
  }
  const { entry, unlisted } = await lookUpTool(s, name);
  const fault = s.ctx.configFault?.();
  if (fault) {
    return s.reply(
      request.id,
      idemAnswer(IDEM_CODES.IDEM_DENIED, {
        detail: `The gateway is stopping because of an error in its config, and runs no tool: ${fault.message}`,
      }),
    );
  }
  if (!entry && unlisted.length > 0) {
    // The tool may belong to an upstream that is restarting: "Unknown tool" would tell a model it does not exist.
    return s.reply(
      request.id,
      idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        detail: `The tools of upstream ${unlisted.map((u) => `"${u}"`).join(', ')} could not be listed: it is down (restarting).`,
      }),
    );
  }
  if (!entry) return s.replyError(request.id, -32602, `Unknown tool: ${name}`);
  const upstream = s.upstreams.get(entry.upstream);
  // SEP-2243: over HTTP a 2026-07-28 call mirrors the arguments its tool marks into headers, and a
  // disagreement is refused before anything is recorded or run.
  const headers = extra?.requestInfo?.headers;
  if (s.era === 'modern' && headers) {
    const mismatch = checkParamHeaders(paramHeadersOf(entry.tool.inputSchema), params.arguments, (h) => {
      const value = headers[h];
      return Array.isArray(value) ? value.join(', ') : value;
    });
    if (mismatch) return s.send({ jsonrpc: '2.0', id: request.id, error: mismatch });
  }

  if (entry.contract.replay === 'read_only' && !entry.action) {
    return forward(
      s,
      { ...request, params: { ...params, name: entry.upstreamName } },
      entry.upstream,
      paramHeadersFor(paramHeadersOf(entry.tool.inputSchema), params.arguments),
    );
  }

  let args: Record<string, unknown>;
  try {
    args = structuredClone(params.arguments ?? {}) as Record<string, unknown>;
  } catch {
    // Nesting deep enough to overflow the stack (JSON.parse accepts it): not an action anyone can identify.
    return s.reply(
      request.id,
      idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, {
        detail: `Invalid arguments for ${name}: nested too deeply to process.`,
      }),
    );
  }
  if (entry.validate && !entry.validate(args)) {
    const why = entry.validate.errors
      ?.map((e) => `${e.instancePath || '(arguments)'} ${e.message}`)
      .join('; ');
    return s.reply(
      request.id,
      idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `Invalid arguments for ${name}: ${why}.` }),
    );
  }
  // What the channel could never carry (an SSH argument with a NUL byte) is refused before anything is claimed.
  const refused = entry.action && refusedArguments(entry.action.channel, args);
  if (refused) return s.reply(request.id, refused);

  // A 2026-07-28 client answering what a 2025-era upstream asked in the middle of this call.
  const continued = roundContinued(s, params, name, args);
  if (continued) return continueRound(s, request, continued, params, replyWithResult);

  const actor = s.actor();
  const session = s.front.sessionId ?? null;
  const forwarded = s.track(request.id, entry.upstream, params._meta, true);
  try {
    const caller = callerOf({ actor, session, requestId: request.id, tool: name, authInfo: extra?.authInfo });
    // An upstream's tool, or one that HTTP or SSH performs: one path through the engine.
    const channel = entry.action?.channel ?? upstreamChannel(s, upstream, entry, params, args, forwarded);
    const { call, dispatch } = actionCall(
      name,
      channel,
      entry.contract,
      args,
      caller,
      forwarded.cancelled?.signal,
    );
    const approved = { ...call, ...approverFor(s, forwarded, entry) };
    if (entry.action)
      return replyWithResult(s, request.id, await s.ctx.engine.execute(approved, dispatch), forwarded);
    const round = openRound(s, upstream, name, args, params._meta, forwarded);
    const execution = s.ctx.engine.execute(approved, countedWhileWorking(s, dispatch));
    if (round) {
      round.run(execution);
      // Awaited here: the request stays in flight (cancellable) until it is answered.
      return await replyFromRound(s, request.id, round, forwarded, replyWithResult);
    }
    return replyWithResult(s, request.id, await execution, forwarded);
  } finally {
    s.inFlight.delete(renderRequestId(request.id));
  }
}

/** The client's human approves by elicitation where it can (gateway/elicitation.ts); else the operator queue. */
function approverFor(
  s: SessionState,
  forwarded: ForwardedRequest,
  entry: CatalogEntry,
): { approver?: Approver } {
  const approver = elicitationApprover(s, forwarded.frontId, entry.contract, forwarded.cancelled?.signal);
  return approver ? { approver } : {};
}

export function replyWithResult(
  s: SessionState,
  id: RequestId,
  result: CallToolResult,
  forwarded: ForwardedRequest,
): Promise<void> {
  // A cancelled request gets no response (the client said it will not use one).
  if (forwarded.cancelled?.signal.aborted) return Promise.resolve();
  // The upstream asked for input before acting: a 2026-07-28 client answers it by calling again.
  if (forwarded.inputRequired && s.era === 'modern') return s.reply(id, forwarded.inputRequired);
  const error = result._meta?.[JSONRPC_ERROR_META] as
    | { code: number; message: string; data?: unknown }
    | undefined;
  if (error) return s.send({ jsonrpc: '2.0', id, error });
  return s.reply(id, result);
}

/**
 * The status tool's `action: "repeat"`: the engine decides whether `ref` may
 * run again; this session runs it through its own upstream connection, as
 * the tool call it was, under this status request's id (so progress and
 * cancellation follow it).
 */
export async function repeat(
  s: SessionState,
  request: JSONRPCRequest,
  ref: string,
  meta: Record<string, unknown> | undefined,
  extra?: MessageExtraInfo,
): Promise<void> {
  const actor = s.actor();
  const session = s.front.sessionId ?? null;
  const forwarded = s.track(request.id, '', meta, true);
  try {
    const caller = callerOf({
      actor,
      session,
      requestId: request.id,
      tool: s.ctx.statusTool,
      authInfo: extra?.authInfo,
    });
    const result = await s.ctx.engine.repeat(ref, caller, async (remembered) => {
      const { entry } = await lookUpTool(s, remembered.tool);
      if (!entry) return undefined;
      // The front checked the status tool's scopes, not those of the tool it would run again.
      const missing = s.ctx.scopesMissing?.(extra?.authInfo, entry.name) ?? [];
      if (missing.length > 0) {
        return {
          answer: idemAnswer(IDEM_CODES.IDEM_INSUFFICIENT_SCOPE, {
            detail: `Repeating ${entry.name} needs the scope ${missing.join(' ')}.`,
          }),
        };
      }
      if (entry.action) {
        const args = remembered.arguments as Record<string, unknown>;
        return actionCall(
          entry.name,
          entry.action.channel,
          entry.contract,
          args,
          caller,
          forwarded.cancelled?.signal,
        );
      }
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
      const args = remembered.arguments as Record<string, unknown>;
      const channel = upstreamChannel(s, upstream, entry, meta ? { _meta: meta } : {}, args, forwarded);
      const { call, dispatch } = actionCall(
        entry.name,
        channel,
        entry.contract,
        args,
        caller,
        forwarded.cancelled?.signal,
      );
      return {
        call: { ...call, ...approverFor(s, forwarded, entry) },
        dispatch: countedWhileWorking(s, dispatch),
      };
    });
    return replyWithResult(s, request.id, result, forwarded);
  } finally {
    s.inFlight.delete(renderRequestId(request.id));
  }
}

/**
 * A call of an upstream's tool as this session makes it: its progress token and
 * the client's cancellation passed on, its `Mcp-Param-*` headers, and the rounds
 * of input the upstream may ask for answered by this session's client.
 */
function upstreamChannel(
  s: SessionState,
  upstream: UpstreamConnection | undefined,
  entry: CatalogEntry,
  params: { _meta?: Record<string, unknown> },
  args: Record<string, unknown>,
  forwarded: ForwardedRequest,
): ActionChannel {
  return new McpChannel({
    name: entry.name,
    upstreamTool: entry.upstreamName,
    upstreamName: entry.upstream,
    upstream,
    params,
    meta: s.upstreamMeta(forwarded, params._meta),
    // A 2026-07-28 HTTP upstream checks these against the arguments (SEP-2243), whoever the client is.
    headers: paramHeadersFor(paramHeadersOf(entry.tool.inputSchema), args),
    waitMs: s.ctx.upstreamWaitMs,
    onSent: (upstreamId) => {
      forwarded.upstreamId = upstreamId;
    },
    // A 2025-era client with a session is asked what a 2026-07-28 upstream needs, and the call is
    // re-issued with the answers: the same execution, since the upstream has not acted yet.
    answerRounds: async (first, resend) => {
      const reply = await withLegacyClientAnswers(s, first, resend, forwarded, entry.contract.attachWindowMs);
      forwarded.upstreamId = undefined;
      return reply;
    },
    inputRequired: (result) => {
      // Answered by replyWithResult: a 2026-07-28 client answers it by calling again.
      forwarded.inputRequired = result;
      return s.era === 'modern'
        ? 'The upstream asks for more input before it acts.'
        : 'The upstream asks for more input before it acts (a 2026-07-28 multi-round-trip request), which a 2025-era client without a session (the stateless front) cannot give. Nothing was executed.';
    },
  });
}

/** Counted until the upstream answers, even when the engine answered the caller first (timeout). */
function countedWhileWorking(s: SessionState, dispatch: Dispatch): Dispatch {
  return async (ctx) => {
    s.working++;
    try {
      return await dispatch(ctx);
    } finally {
      s.working--;
    }
  };
}
