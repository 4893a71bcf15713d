import type { CallToolResult, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JSONRPC_ERROR_META } from '../../dispatch/mcp/index.js';
import type { ForwardedRequest, SessionState } from '../sessions/session-state.js';

/**
 * What the pipeline answers a `tools/call` with. The pipeline decides; the
 * proxy core (session.ts) sends it, so no step of the pipeline reaches back
 * up to the session to answer.
 */
export type ToolCallAnswer =
  | { result: CallToolResult | Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } }
  /** Nothing to send: the reply already went (a pass-through), or the client cancelled. */
  | { none: true };

export const NO_ANSWER: ToolCallAnswer = { none: true };

/** A tool's result as the client gets it. */
export function answerOf(result: CallToolResult, forwarded: ForwardedRequest): ToolCallAnswer {
  // A cancelled request gets no response (the client said it will not use one).
  if (forwarded.cancelled?.signal.aborted) return NO_ANSWER;
  // An upstream's JSON-RPC error, carried through the engine inside the result: it goes back as that error.
  const error = result._meta?.[JSONRPC_ERROR_META] as
    | { code: number; message: string; data?: unknown }
    | undefined;
  if (error) return { error };
  return { result };
}

export function sendAnswer(s: SessionState, id: RequestId, answer: ToolCallAnswer): Promise<void> {
  if ('result' in answer) return s.reply(id, answer.result);
  if ('error' in answer) return s.send({ jsonrpc: '2.0', id, error: answer.error });
  return Promise.resolve();
}
