import type { CallToolResult, JSONRPCRequest, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import type { TaskRequest } from '../../executions/call.js';
import { taskOf } from '../../executions/tasks.js';
import { taskRequestOf as taskRequestFor } from '../../protocol/task-requests.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import type { SessionState } from '../sessions/session-state.js';
import { createTaskResult } from '../tasks/tasks.js';
import { answerOf, NO_ANSWER, type ToolCallAnswer } from '../tool-calls/answer.js';
import { callTool } from '../tool-calls/pipeline.js';
import type { RevisionHooks } from '../tool-calls/revision-hooks.js';
import { callStatusTool } from '../tool-calls/status-tool-call.js';
import { readToolCall, type ToolCallRequest } from '../tool-calls/tool-call-request.js';
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
  return callTool(s, call, hooksOf(s));
}

/** A call of Idem's own status tool (session.ts routes it by name), wrapped the same way. */
export async function statusToolCall(
  s: SessionState,
  request: JSONRPCRequest,
  extra?: MessageExtraInfo,
): Promise<ToolCallAnswer> {
  const call = readToolCall(request, extra);
  return callStatusTool(s, call, hooksOf(s));
}

/** One set of hooks per session, made on its first call: they hold nothing of a call's own. */
const hooksBySession = new WeakMap<SessionState, RevisionHooks>();

function hooksOf(s: SessionState): RevisionHooks {
  let hooks = hooksBySession.get(s);
  if (!hooks) {
    hooks = revisionHooks(s);
    hooksBySession.set(s, hooks);
  }
  return hooks;
}

function revisionHooks(s: SessionState): RevisionHooks {
  const answer: RevisionHooks['answer'] = (result, forwarded) => answerFor(s, result, forwarded);
  return {
    continuing(call, args) {
      // A 2026-07-28 client answering what a 2025-era upstream asked in the middle of this call.
      const round = roundContinued(s, call, call.name, args);
      return round ? continueRound(s, call, round, answer) : undefined;
    },
    taskOf: (call, entry) => taskRequestOf(s, call, entry),
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
  // The call is a task now: the client gets its CreateTaskResult, in its revision's shape.
  const task = taskOf(result);
  if (task) return { result: createTaskResult(s, task) };
  if (forwarded.inputRequired && s.era === 'modern') return { result: forwarded.inputRequired };
  return answerOf(result, forwarded);
}

/** Whether the client can take a task for this call, by its revision's rule (protocol/task-requests.ts). */
function taskRequestOf(
  s: SessionState,
  call: ToolCallRequest,
  entry: CatalogEntry,
): { task?: TaskRequest } | { refused: ToolCallAnswer } {
  return taskRequestFor(s.era === 'modern', call.request.params, entry.contract.task, call.name);
}
