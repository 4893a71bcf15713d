import type { CallToolResult, JSONRPCRequest, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import type { SessionState } from '../session-state.js';
import { answerOf, NO_ANSWER, type ToolCallAnswer } from '../tool-calls/answer.js';
import { callTool } from '../tool-calls/pipeline.js';
import type { RevisionHooks } from '../tool-calls/revision-hooks.js';
import { callStatusTool } from '../tool-calls/status-tool-call.js';
import { readToolCall } from '../tool-calls/tool-call-request.js';
import {
  answerFromRound,
  continueRound,
  openRound,
  roundContinued,
  withLegacyClientAnswers,
} from './input-rounds.js';

/**
 * A `tools/call` as the session receives it: the pipeline (tool-calls/)
 * wrapped in the protocol-revision bridge. A client of either revision
 * family may meet an upstream of either; where the input a tool asks for
 * mid-call crosses between them (input-rounds.ts), and what a 2026-07-28
 * client is answered that a 2025-era one is not, is decided here, at the
 * points the pipeline names (RevisionHooks). The proxy core (session.ts) sends the answer.
 */
export async function toolsCall(
  s: SessionState,
  request: JSONRPCRequest,
  extra?: MessageExtraInfo,
): Promise<ToolCallAnswer> {
  const call = readToolCall(request, extra);
  return callTool(s, call, revisionHooks(s));
}

/** A call of Idem's own status tool (session.ts routes it by name), wrapped the same way. */
export async function statusToolCall(
  s: SessionState,
  request: JSONRPCRequest,
  extra?: MessageExtraInfo,
): Promise<ToolCallAnswer> {
  const call = readToolCall(request, extra);
  return callStatusTool(s, call, revisionHooks(s));
}

function revisionHooks(s: SessionState): RevisionHooks {
  const answer: RevisionHooks['answer'] = (result, forwarded) => answerFor(s, result, forwarded);
  return {
    continuing(call, args) {
      // A 2026-07-28 client answering what a 2025-era upstream asked in the middle of this call.
      const round = roundContinued(s, call, call.name, args);
      return round ? continueRound(s, call, round, answer) : undefined;
    },
    channelHooks: (forwarded, entry) => ({
      // A 2025-era client with a session is asked what a 2026-07-28 upstream needs, and the call is
      // re-issued with the answers: the same execution, since the upstream has not acted yet.
      answerRounds: async (first, resend) => {
        const reply = await withLegacyClientAnswers(
          s,
          first,
          resend,
          forwarded,
          entry.contract.attachWindowMs,
        );
        forwarded.upstreamId = undefined;
        return reply;
      },
      inputRequired: (result) => {
        // Answered by answerFor: a 2026-07-28 client answers it by calling again.
        forwarded.inputRequired = result;
        return s.era === 'modern'
          ? 'The upstream asks for more input before it acts.'
          : 'The upstream asks for more input before it acts (a 2026-07-28 multi-round-trip request), which a 2025-era client without a session (the stateless front) cannot give. Nothing was executed.';
      },
    }),
    answering(call, entry, args, forwarded) {
      const round = openRound(s, s.upstreams.get(entry.upstream), call.name, args, call.meta, forwarded);
      return async (execution) => {
        if (!round) return answer(await execution, forwarded);
        round.run(execution);
        return answerFromRound(round, forwarded, answer);
      };
    },
    answer,
  };
}

/** A finished call's result for this client: a 2026-07-28 client gets the upstream's `input_required` as it is. */
function answerFor(
  s: SessionState,
  result: CallToolResult,
  forwarded: Parameters<RevisionHooks['answer']>[1],
): ToolCallAnswer {
  if (forwarded.cancelled?.signal.aborted) return NO_ANSWER;
  if (forwarded.inputRequired && s.era === 'modern') return { result: forwarded.inputRequired };
  return answerOf(result, forwarded);
}
