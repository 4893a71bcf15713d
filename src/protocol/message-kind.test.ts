import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { isErrorResponse, isNotification, isRequest, isResponse, isResultResponse } from './message-kind.js';

/** Messages of every kind the schema accepts, with the members that vary (ids, params, _meta, data). */
const MESSAGES: JSONRPCMessage[] = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } },
  { jsonrpc: '2.0', id: 'a', method: 'ping' },
  { jsonrpc: '2.0', id: 0, method: 'initialize', params: { _meta: { progressToken: 3 } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
  { jsonrpc: '2.0', id: 7, result: {} },
  { jsonrpc: '2.0', id: 'x', result: { content: [], _meta: { 'io.idem/replayed': true } } },
  { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found' } },
  { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error', data: { at: 3 } } },
] as JSONRPCMessage[];

describe("a validated message's kind, by its members (issue 30: no zod schema per check)", () => {
  it.each(MESSAGES.map((m) => [JSON.stringify(m), m] as const))(
    '%s: the same kind as the SDK schemas say',
    (_, message) => {
      expect(JSONRPCMessageSchema.safeParse(message).success).toBe(true);
      expect({
        request: isRequest(message),
        notification: isNotification(message),
        result: isResultResponse(message),
        error: isErrorResponse(message),
        response: isResponse(message),
      }).toEqual({
        request: isJSONRPCRequest(message),
        notification: isJSONRPCNotification(message),
        result: isJSONRPCResultResponse(message),
        error: isJSONRPCErrorResponse(message),
        response: isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message),
      });
    },
  );

  it('a reply the gateway built without a result object is not a result response', () => {
    const broken = { jsonrpc: '2.0', id: 1, result: undefined } as unknown as JSONRPCMessage;
    expect(isResultResponse(broken)).toBe(false);
    expect(isResponse(broken)).toBe(false);
  });
});
