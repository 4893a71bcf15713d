import type { IncomingHttpHeaders } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { JSONRPCRequest, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * One `tools/call` as the gateway reads it: what the client asked, and what
 * its transport said about it (the HTTP headers a 2026-07-28 call mirrors its
 * arguments into, the token it came with).
 */
export interface ToolCallRequest {
  id: RequestId;
  /** The tool's name as the client sees it ('' when the client sent none, or not a string). */
  name: string;
  /** As sent: checked against the tool's schema before anything is claimed (gateway/tool-calls/tool-call.ts). */
  arguments: unknown;
  meta: Record<string, unknown> | undefined;
  /** 2026-07-28: the answers to an `input_required` round, and the state it named. */
  inputResponses: unknown;
  requestState: unknown;
  headers: IncomingHttpHeaders | undefined;
  authInfo: AuthInfo | undefined;
  /** The request as it came: a read-only tool is passed through as it is. */
  request: JSONRPCRequest;
}

export function readToolCall(request: JSONRPCRequest, extra?: MessageExtraInfo): ToolCallRequest {
  const params = (request.params ?? {}) as {
    name?: unknown;
    arguments?: unknown;
    _meta?: Record<string, unknown>;
    inputResponses?: unknown;
    requestState?: unknown;
  };
  return {
    id: request.id,
    name: typeof params.name === 'string' ? params.name : '',
    arguments: params.arguments,
    meta: params._meta,
    inputResponses: params.inputResponses,
    requestState: params.requestState,
    headers: extra?.requestInfo?.headers,
    authInfo: extra?.authInfo,
    request,
  };
}
