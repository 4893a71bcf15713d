import type {
  CallToolResult,
  JSONRPCRequest,
  MessageExtraInfo,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { actionCall, refusedArguments } from '../dispatch/action-call.js';
import {
  UpstreamClosedError,
  type UpstreamConnection,
  type UpstreamReply,
  UpstreamUnavailableError,
} from '../dispatch/mcp/index.js';
import { IDEM_CODES, NotDispatchedError, OutcomeUnknownError } from '../errors.js';
import { idemAnswer, META } from '../executions/answers.js';
import type { Approver } from '../executions/engine.js';
import { parseStatusArguments } from '../executions/status-tool.js';
import { tokenRefOf } from '../identity/actor.js';
import { renderRequestId, requestKey } from '../identity/request-key.js';
import {
  HEADER_MISMATCH,
  isInputRequired,
  MISSING_REQUIRED_CLIENT_CAPABILITY,
  UNSUPPORTED_PROTOCOL_VERSION,
} from '../protocol/eras.js';
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
import { type ForwardedRequest, JSONRPC_ERROR_META, type SessionState } from './session-state.js';
import { lookUpTool } from './tools-list.js';

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
    const caller = {
      actor,
      session,
      requestRef: requestKey({ actor, session, id: request.id, method: 'tools/call', tool: name }),
      ...tokenOf(extra),
    };
    if (entry.action) {
      const { call, dispatch } = actionCall(
        name,
        entry.action.channel,
        entry.contract,
        args,
        caller,
        forwarded.cancelled?.signal,
      );
      const approved = { ...call, ...approverFor(s, forwarded, entry) };
      return replyWithResult(s, request.id, await s.ctx.engine.execute(approved, dispatch), forwarded);
    }
    const round = openRound(s, upstream, name, args, params._meta, forwarded);
    const execution = s.ctx.engine.execute(
      {
        signal: forwarded.cancelled?.signal,
        tool: name,
        channel: 'mcp',
        target: entry.upstream,
        credentialRef: null,
        method: 'tools/call',
        arguments: args,
        contract: entry.contract,
        caller,
        // The ladder's "target unresolved" step, for an MCP tool: its upstream is not one this session knows.
        ...(upstream ? {} : { unresolved: `the upstream "${entry.upstream}" of ${name} is not configured` }),
        ...approverFor(s, forwarded, entry),
      },
      ({ executionId }) =>
        dispatchToolCall(
          s,
          upstream as UpstreamConnection,
          entry,
          params,
          args,
          executionId as string,
          forwarded,
        ),
    );
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

/** The OAuth token a request came with, as the journal records it (issuer, jti). */
function tokenOf(extra: MessageExtraInfo | undefined) {
  const token = tokenRefOf(extra?.authInfo ? { authInfo: extra.authInfo } : {});
  return token ? { token } : {};
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
    const caller = {
      actor,
      session,
      requestRef: requestKey({
        actor,
        session,
        id: request.id,
        method: 'tools/call',
        tool: s.ctx.statusTool,
      }),
      ...tokenOf(extra),
    };
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
      const found = entry;
      return {
        call: {
          signal: forwarded.cancelled?.signal,
          tool: found.name,
          channel: 'mcp',
          target: found.upstream,
          credentialRef: null,
          method: 'tools/call',
          arguments: args,
          contract: found.contract,
          caller,
          ...approverFor(s, forwarded, found),
        },
        dispatch: ({ executionId }) =>
          dispatchToolCall(
            s,
            upstream,
            found,
            meta ? { _meta: meta } : {},
            args,
            executionId as string,
            forwarded,
          ),
      };
    });
    return replyWithResult(s, request.id, result, forwarded);
  } finally {
    s.inFlight.delete(renderRequestId(request.id));
  }
}

export async function dispatchToolCall(
  s: SessionState,
  upstream: UpstreamConnection,
  entry: CatalogEntry,
  params: { _meta?: Record<string, unknown> },
  args: Record<string, unknown>,
  executionId: string,
  forwarded: ForwardedRequest,
): Promise<CallToolResult> {
  // Counted until the upstream answers, even when the engine answered the caller first (timeout).
  s.working++;
  try {
    return await dispatchOn(s, upstream, entry, params, args, executionId, forwarded);
  } finally {
    s.working--;
  }
}

async function dispatchOn(
  s: SessionState,
  upstream: UpstreamConnection,
  entry: CatalogEntry,
  params: { _meta?: Record<string, unknown> },
  args: Record<string, unknown>,
  executionId: string,
  forwarded: ForwardedRequest,
): Promise<CallToolResult> {
  // Waiting here, after the engine matched the call, lets a retry of an earlier call hear about
  // that call (unknown, completed) rather than "not executed" while the upstream restarts.
  if (!upstream.available) {
    await upstream.whenReady(s.ctx.upstreamWaitMs).catch(() => {
      throw new NotDispatchedError(`The upstream "${entry.upstream}" is down (restarting).`);
    });
  }
  const send = async (round: Record<string, unknown>): Promise<UpstreamReply> => {
    try {
      return await upstream.request(
        'tools/call',
        {
          ...params,
          ...round,
          name: entry.upstreamName,
          arguments: args,
          // An upstream built with the Idem library deduplicates on this across the boundary.
          _meta: { ...s.upstreamMeta(forwarded, params._meta), [META.executionId]: executionId },
        },
        undefined,
        (upstreamId) => {
          forwarded.upstreamId = upstreamId;
        },
        // A 2026-07-28 HTTP upstream checks these against the arguments (SEP-2243), whoever the client is.
        paramHeadersFor(paramHeadersOf(entry.tool.inputSchema), args),
      );
    } catch (error) {
      // Could not send: nothing reached the upstream. Sent, then the upstream went away: it may have acted.
      if (error instanceof UpstreamUnavailableError) throw new NotDispatchedError(error.message);
      if (error instanceof UpstreamClosedError) throw new OutcomeUnknownError(error.message);
      throw error;
    }
  };
  // A 2025-era client with a session is asked what a 2026-07-28 upstream needs, and the call is
  // re-issued with the answers: the same execution, since the upstream has not acted yet.
  const reply = await withLegacyClientAnswers(
    s,
    await send({}),
    send,
    forwarded,
    entry.contract.attachWindowMs,
  );
  forwarded.upstreamId = undefined;
  if ('result' in reply && isInputRequired(reply.result)) {
    // Not an outcome: the upstream has not acted yet and waits for the client's answers, which
    // come in a new call (with the same arguments: a new execution of the same intent, since this
    // one is retired as not executed).
    forwarded.inputRequired = reply.result as Record<string, unknown>;
    throw new NotDispatchedError(
      s.era === 'modern'
        ? 'The upstream asks for more input before it acts.'
        : 'The upstream asks for more input before it acts (a 2026-07-28 multi-round-trip request), which a 2025-era client without a session (the stateless front) cannot give. Nothing was executed.',
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
  return reply.result as CallToolResult;
}
