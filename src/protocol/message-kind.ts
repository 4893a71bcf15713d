import type {
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * Which of the four JSON-RPC messages a message is, by its members alone.
 *
 * For a value that is already a `JSONRPCMessage`: one the SDK's
 * `JSONRPCMessageSchema` accepted where it came in (the SDK transports, the
 * HTTP front's `invalidRequest`, an upstream's StdoutLines), or one the gateway
 * built. The SDK's `isJSONRPCRequest` and its siblings run a zod schema on
 * every call, and a call met them a dozen times on its way through (ADR/issue
 * 30: ~150 µs of zod per call); the schema's four shapes are strict, so once
 * one of them has accepted a message, which one it was shows in its members:
 * a request has `method` and `id`, a notification `method` and no `id`, a
 * result response `result`, an error response `error`. Input not yet validated
 * still goes through the schema first: these never replace it.
 */
export function isRequest(message: JSONRPCMessage): message is JSONRPCRequest {
  return 'method' in message && (message as { id?: unknown }).id !== undefined;
}

export function isNotification(message: JSONRPCMessage): message is JSONRPCNotification {
  return 'method' in message && (message as { id?: unknown }).id === undefined;
}

export function isResultResponse(message: JSONRPCMessage): message is JSONRPCResultResponse {
  // An object, as the schema's `result` must be: a reply the gateway built with none is not one.
  const result = (message as { result?: unknown }).result;
  return !('method' in message) && typeof result === 'object' && result !== null && !Array.isArray(result);
}

export function isErrorResponse(message: JSONRPCMessage): message is JSONRPCErrorResponse {
  const error = (message as { error?: unknown }).error;
  return !('method' in message) && !('result' in message) && typeof error === 'object' && error !== null;
}

/** A result or an error response: the answer to a request. */
export function isResponse(message: JSONRPCMessage): message is JSONRPCResultResponse | JSONRPCErrorResponse {
  return isResultResponse(message) || isErrorResponse(message);
}
