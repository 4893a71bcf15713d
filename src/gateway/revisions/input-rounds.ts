import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamReply } from '../../dispatch/mcp/index.js';
import { NotDispatchedError } from '../../errors.js';
import { isInputRequired } from '../../protocol/revisions.js';
import type { ToolCallRequest } from '../../protocol/tool-call-request.js';
import type { SharedUpstreams } from '../sessions/session-state.js';
import type {
  CallContext,
  CallSession,
  ForwardedRequest,
  ToolCallAnswer,
} from '../tool-calls/call-context.js';
import { INPUT_METHODS, type InputRound, MAX_INPUT_ROUNDS } from './input-round.js';

/**
 * Input a tool asks of the client in the middle of a call, across the two
 * revisions. A 2025-era server asks by sending a request (elicitation,
 * sampling, roots) while the call runs; a 2026-07-28 server answers the call
 * with `input_required` and the client calls again with the answers (a
 * multi-round-trip request). Through the gateway either client meets either
 * server, and the call keeps one execution throughout: an input round is not
 * a new intent (docs/lifecycle.md, step 3).
 *
 * - 2026-07-28 client, 2025-era upstream: the upstream's request is held and
 *   the client's call is answered `input_required` (its `requestState` names
 *   the round); the client's next call with the answers is routed to the held
 *   request and waits for the same execution to finish.
 * - 2025-era client (with a session), 2026-07-28 upstream: the gateway asks
 *   the client each embedded request itself and re-issues the call upstream
 *   with the answers, inside the one dispatch (the SDK's "legacy shim").
 */

/**
 * Runs a call in the round it opened: the round is open while the execution runs, and the call
 * is answered with the execution's result or, first, with the questions the upstream asked.
 */
export function answerInRound(
  ctx: CallContext,
  round: InputRound,
  execution: Promise<CallToolResult>,
  forwarded: ForwardedRequest,
): Promise<ToolCallAnswer> {
  const upstream = ctx.upstreams.get(round.upstream);
  round.run(execution, () => {
    forwarded.cancelled?.abort();
    if (upstream && forwarded.upstreamId !== undefined)
      void upstream.notify('notifications/cancelled', {
        requestId: forwarded.upstreamId,
        reason: 'the client closed the request stream',
      });
  });
  return answerFromRound(ctx, round, forwarded);
}

/** What a call of the round gets: the execution's result, or the questions still open. */
async function answerFromRound(
  ctx: CallContext,
  round: InputRound,
  forwarded: ForwardedRequest,
): Promise<ToolCallAnswer> {
  const next = await round.next();
  if ('inputRequired' in next) return { result: next.inputRequired };
  return ctx.revision.answer(ctx, next.final, forwarded);
}

/**
 * The client's next call of a round: its answers go to the held upstream
 * requests, and it waits for the same execution (no new one is claimed).
 * Closing its stream cancels that execution, as closing the first would have.
 */
export async function continueRound(
  ctx: CallContext,
  call: ToolCallRequest,
  round: InputRound,
): Promise<ToolCallAnswer> {
  const forwarded = ctx.session.track(call.id, round.upstream, call.meta, true);
  forwarded.cancelled?.signal.addEventListener('abort', () => round.cancel(), { once: true });
  try {
    round.answer(call.inputResponses);
    return await answerFromRound(ctx, round, forwarded);
  } finally {
    ctx.session.untrack(call.id);
  }
}

/**
 * An upstream's request to the client on a shared connection: to the one
 * open round on that upstream (more than one cannot be told apart: a
 * 2025-era request does not say which call it belongs to).
 */
export function roundAsking(shared: SharedUpstreams, upstreamName: string): InputRound | undefined {
  const open = [...shared.rounds.values()].filter((r) => r.upstream === upstreamName && !r.ended);
  return open.length === 1 ? open[0] : undefined;
}

/**
 * A 2026-07-28 upstream's answer to a call, for a 2025-era client with a
 * session: while it is `input_required`, the client is asked and the call
 * re-issued (`send`) with the answers — inside the one dispatch. What cannot
 * be asked ends the call as not executed: the upstream has not acted.
 */
export async function withLegacyClientAnswers(
  s: CallSession,
  first: UpstreamReply,
  send: (round: Record<string, unknown>) => Promise<UpstreamReply>,
  forwarded: ForwardedRequest,
  timeoutMs: number,
): Promise<UpstreamReply> {
  // A client of the stateless front has no session to be asked in.
  if (!s.canAsk) return first;
  let reply = first;
  for (let round = 1; 'result' in reply && isInputRequired(reply.result); round++) {
    const answers =
      round > MAX_INPUT_ROUNDS
        ? { problem: `the upstream asked for input ${MAX_INPUT_ROUNDS} times` }
        : await answerForLegacyClient(s, reply.result as Record<string, unknown>, forwarded, timeoutMs);
    if ('problem' in answers)
      throw new NotDispatchedError(
        `The upstream asks for more input before it acts, and ${answers.problem}. Nothing was executed.`,
      );
    reply = await send(answers.params);
  }
  return reply;
}

/**
 * Each request an `input_required` embeds, asked of the 2025-era client; the
 * answers go back in `inputResponses` (with the upstream's `requestState`).
 * Returns the params of the re-issued call, or why it cannot be made.
 */
async function answerForLegacyClient(
  s: CallSession,
  inputRequired: Record<string, unknown>,
  forwarded: ForwardedRequest,
  timeoutMs: number,
): Promise<{ params: Record<string, unknown> } | { problem: string }> {
  const requests = (inputRequired.inputRequests ?? {}) as Record<
    string,
    { method?: unknown; params?: unknown }
  >;
  const inputResponses: Record<string, unknown> = {};
  for (const [key, request] of Object.entries(requests)) {
    const method = typeof request?.method === 'string' ? request.method : '';
    const capability = INPUT_METHODS[method];
    if (!capability)
      return {
        problem: `the upstream asked for ${method || 'an unknown request'}, which a client cannot be asked`,
      };
    if ((s.clientCapabilities as Record<string, unknown> | undefined)?.[capability] === undefined)
      return {
        problem: `the upstream needs ${method}, and the client did not declare the ${capability} capability`,
      };
    const params = { ...((request.params ?? {}) as Record<string, unknown>) };
    // 2025-11-25 requires an id on URL-mode elicitations; the 2026-07-28 in-band form has none.
    if (method === 'elicitation/create' && params.mode === 'url' && params.elicitationId === undefined)
      params.elicitationId = randomUUID();
    const reply = await s.ask(method, params, forwarded.frontId, forwarded.cancelled?.signal, timeoutMs);
    if (!reply) return { problem: `the client did not answer ${method}` };
    if ('error' in reply) return { problem: `the client refused ${method}: ${reply.error.message}` };
    inputResponses[key] = reply.result;
  }
  return {
    params: {
      inputResponses,
      ...(typeof inputRequired.requestState === 'string' ? { requestState: inputRequired.requestState } : {}),
    },
  };
}
