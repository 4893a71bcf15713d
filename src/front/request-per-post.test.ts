import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { encodeHeaderValue } from '../protocol/param-headers.js';
import { ENVELOPE, HEADER_MISMATCH } from '../protocol/revisions.js';
import { classifyEra } from './request-per-post.js';

/** A POST as the HTTP front receives it: only its headers are read here. */
function post(headers: Record<string, string>): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...headers,
  };
  return req;
}

const envelope = { [ENVELOPE.protocolVersion]: '2026-07-28', [ENVELOPE.clientCapabilities]: {} };
const TASK_ID = 'tsk_Zm9vYmFyYmF6cXV4';

function request(method: string, params: Record<string, unknown>) {
  return { jsonrpc: '2.0', id: 'req-9', method, params: { ...params, _meta: envelope } };
}

function headersFor(method: string, name?: string): Record<string, string> {
  return {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  };
}

const TASK_METHODS: [string, Record<string, unknown>][] = [
  ['tasks/get', { taskId: TASK_ID }],
  ['tasks/update', { taskId: TASK_ID, inputResponses: {} }],
  ['tasks/cancel', { taskId: TASK_ID }],
];

describe('Mcp-Name on tasks/* (SEP-2663): the task id', () => {
  it.each(TASK_METHODS)('%s with the task id: served', (method, params) => {
    const era = classifyEra(post(headersFor(method, TASK_ID)), request(method, params));
    expect(era).toMatchObject({ kind: 'modern', message: { method, id: 'req-9' } });
  });

  it.each(TASK_METHODS)('%s with the task id Base64-encoded: served', (method, params) => {
    const era = classifyEra(post(headersFor(method, encodeHeaderValue(` ${TASK_ID}`))), {
      ...request(method, params),
      params: { ...params, taskId: ` ${TASK_ID}`, _meta: envelope },
    });
    expect(era.kind).toBe('modern');
  });

  it.each(TASK_METHODS)('%s naming another task: -32020, HTTP 400, with the request id', (method, params) => {
    const era = classifyEra(post(headersFor(method, 'tsk_other')), request(method, params));
    expect(era).toMatchObject({
      kind: 'reject',
      status: 400,
      reply: {
        id: 'req-9',
        error: { code: HEADER_MISMATCH, data: { mismatch: { header: 'Mcp-Name', body: TASK_ID } } },
      },
    });
  });

  it.each(TASK_METHODS)('%s without Mcp-Name: -32020, HTTP 400, with the request id', (method, params) => {
    const era = classifyEra(post(headersFor(method)), request(method, params));
    expect(era).toMatchObject({
      kind: 'reject',
      status: 400,
      reply: { id: 'req-9', error: { code: HEADER_MISMATCH, message: expect.stringContaining('Mcp-Name') } },
    });
  });

  it('a method with no name to mirror needs no Mcp-Name (tasks/list is not a 2026-07-28 method)', () => {
    expect(classifyEra(post(headersFor('tasks/list')), request('tasks/list', {})).kind).toBe('modern');
    expect(classifyEra(post(headersFor('tools/list')), request('tools/list', {})).kind).toBe('modern');
  });

  it('the other methods keep their sources: tools/call its name, resources/read its uri', () => {
    const call = request('tools/call', { name: 'greet', arguments: {}, taskId: TASK_ID });
    expect(classifyEra(post(headersFor('tools/call', 'greet')), call).kind).toBe('modern');
    expect(classifyEra(post(headersFor('tools/call', TASK_ID)), call).kind).toBe('reject');
    const read = request('resources/read', { uri: 'file:///a' });
    expect(classifyEra(post(headersFor('resources/read', 'file:///a')), read).kind).toBe('modern');
  });
});

describe("the era of a body told without the SDK's classifier agrees with it (issue 30)", () => {
  const claim = { [ENVELOPE.protocolVersion]: 7 };
  const bodies: [string, unknown][] = [
    ['a call', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } }],
    [
      'a call with other _meta',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'e', _meta: { progressToken: 1 } } },
    ],
    [
      'a call with a claim that is not a version',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'e', _meta: claim } },
    ],
    ['a modern call', request('tools/call', { name: 'echo' })],
    ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }],
    [
      'a modern notification',
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope } },
    ],
    [
      'an initialize',
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      },
    ],
    ['a result', { jsonrpc: '2.0', id: 3, result: {} }],
    ['an error', { jsonrpc: '2.0', id: 3, error: { code: 1, message: 'no' } }],
    ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'ping' }]],
  ];
  const headerSets: [string, Record<string, string>][] = [
    ['no headers', {}],
    ['a legacy version header', { 'mcp-protocol-version': '2025-06-18' }],
    ['a modern version header', { 'mcp-protocol-version': '2026-07-28' }],
    ['a modern version header in whitespace', { 'mcp-protocol-version': ' \t2026-07-28 ' }],
    ['all three modern headers', headersFor('tools/call', 'echo')],
  ];
  for (const [bodyName, body] of bodies)
    for (const [headerName, headers] of headerSets)
      it(`${bodyName}, ${headerName}`, () => {
        const req = post(headers);
        const sdk = classifyInboundRequest({
          httpMethod: 'POST',
          body,
          ...(headers['mcp-protocol-version']
            ? { protocolVersionHeader: headers['mcp-protocol-version'] }
            : {}),
          ...(headers['mcp-method'] ? { mcpMethodHeader: headers['mcp-method'] } : {}),
          ...(headers['mcp-name'] ? { mcpNameHeader: headers['mcp-name'] } : {}),
        });
        const ours = classifyEra(req, body);
        // Legacy exactly when the SDK says so; a modern or refused request keeps the SDK's verdict's kind.
        expect(ours.kind === 'legacy').toBe(sdk.kind === 'legacy');
        if (sdk.kind === 'reject') expect(ours.kind).toBe('reject');
      });
});
