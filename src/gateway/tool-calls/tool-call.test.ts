import type { CallToolResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { resolveContract, type ToolContract } from '../../contracts/contract.js';
import type { ActionChannel } from '../../dispatch/channel.js';
import { JSONRPC_ERROR_META, type UpstreamConnection } from '../../dispatch/mcp/index.js';
import { idemCodeOf } from '../../executions/answers.js';
import type { ToolCall } from '../../executions/call.js';
import type { ExecutionEngine } from '../../executions/engine.js';
import { HEADER_MISMATCH } from '../../protocol/revisions.js';
import { readToolCall } from '../../protocol/tool-call-request.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import { LEGACY, MODERN } from '../revisions/client-revision.js';
import { type InputRound, roundOf } from '../revisions/input-round.js';
import type {
  CallContext,
  CallSession,
  ClientRevision,
  ForwardedRequest,
  ToolCallAnswer,
} from './call-context.js';
import { callTool } from './tool-call.js';

// The handler on a fake context: a catalog of a few tools, a counting engine, a session that
// records what it tracks. The real stack is covered by test/gateway/ and the conformance runs.

const ajv = new Ajv({ strict: false });

function entryOf(
  name: string,
  contract: ToolContract | undefined,
  options: { readOnlyHint?: boolean; action?: boolean; inputSchema?: Record<string, unknown> } = {},
): CatalogEntry {
  const inputSchema = (options.inputSchema ?? { type: 'object' }) as CatalogEntry['tool']['inputSchema'];
  const channel: ActionChannel = {
    kind: 'http',
    target: 'https://pay.example',
    credential: null,
    method: 'POST',
    dispatch: async () => ({ content: [] }),
  } as unknown as ActionChannel;
  return {
    name,
    upstream: options.action ? '' : 'up',
    upstreamName: name,
    tool: { name, inputSchema, annotations: { readOnlyHint: options.readOnlyHint } },
    contract: resolveContract(contract, { readOnlyHint: options.readOnlyHint }),
    source: 'config',
    validate: ajv.compile(inputSchema),
    ...(options.action ? { action: { name, description: '', inputSchema, contract, channel } } : {}),
  } as unknown as CatalogEntry;
}

const TOOLS = new Map<string, CatalogEntry>([
  ['pay', entryOf('pay', { replay: 'keyed' }, { action: true })],
  ['refund', entryOf('refund', { replay: 'review' })],
  ['search', entryOf('search', undefined, { readOnlyHint: true })],
  [
    'strict',
    entryOf(
      'strict',
      { replay: 'keyed' },
      { inputSchema: { type: 'object', required: ['amount'] }, action: true },
    ),
  ],
  [
    'routed',
    entryOf(
      'routed',
      { replay: 'keyed' },
      {
        inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } },
      },
    ),
  ],
  ['long', entryOf('long', { replay: 'keyed', task: 'required' }, { action: true })],
]);

/** A session that records what it tracks; nothing is ever sent. */
function fakeSession(rounds?: Map<string, InputRound>) {
  const tracked: ForwardedRequest[] = [];
  const inFlight = new Set<string>();
  const session: CallSession = {
    id: 'session-1',
    canAsk: rounds === undefined,
    clientCapabilities: undefined,
    rounds,
    upstreamWaitMs: 10,
    statusTool: 'idem_status',
    closed: false,
    ended: new AbortController().signal,
    scopesMissing: () => [],
    track(frontId, upstream) {
      const forwarded = { frontId, upstream, cancelled: new AbortController() };
      tracked.push(forwarded);
      inFlight.add(String(frontId));
      return forwarded;
    },
    untrack(frontId) {
      inFlight.delete(String(frontId));
    },
    dispatching: () => () => {},
    ask: async () => undefined,
    send: async () => {},
    failed: () => {},
  };
  return { session, tracked, inFlight };
}

/** An engine that counts its calls and answers each with `result`. */
function countingEngine(result: CallToolResult = { content: [{ type: 'text', text: 'done' }] }) {
  const calls: ToolCall[] = [];
  const engine = {
    execute: async (call: ToolCall) => {
      calls.push(call);
      return result;
    },
  } as unknown as ExecutionEngine;
  return { engine, calls };
}

function contextOf(
  revision: ClientRevision = LEGACY,
  options: {
    fault?: Error;
    result?: CallToolResult;
    rounds?: Map<string, InputRound>;
    upstream?: UpstreamConnection;
  } = {},
) {
  const { engine, calls } = countingEngine(options.result);
  const { session, tracked, inFlight } = fakeSession(options.rounds);
  const ctx: CallContext = {
    catalog: {
      lookUp: async (name) => ({
        entry: TOOLS.get(name),
        unlisted: [],
        ...(options.fault ? { fault: options.fault } : {}),
      }),
    },
    upstreams: new Map(options.upstream ? [['up', options.upstream]] : []),
    engine,
    actor: 'alice',
    session,
    revision,
  };
  return { ctx, calls, tracked, inFlight };
}

let nextId = 1;
function callOf(
  name: string,
  args: unknown,
  more: Record<string, unknown> = {},
  headers?: Record<string, string>,
) {
  const request = {
    jsonrpc: '2.0',
    id: nextId++,
    method: 'tools/call',
    params: { name, arguments: args, ...more },
  } as JSONRPCRequest;
  return readToolCall(request, headers ? { requestInfo: { headers } } : undefined);
}

function codeOf(answer: ToolCallAnswer) {
  return 'result' in answer ? idemCodeOf(answer.result as CallToolResult) : undefined;
}

describe('callTool (the tools/call handler)', () => {
  it('runs an effectful call through the engine once, as its actor, and untracks it when answered', async () => {
    const { ctx, calls, tracked, inFlight } = contextOf();
    const answer = await callTool(ctx, callOf('pay', { amount: 5 }));
    expect(answer).toEqual({ result: { content: [{ type: 'text', text: 'done' }] } });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: 'pay', arguments: { amount: 5 }, channel: 'http' });
    expect(calls[0]?.caller).toMatchObject({ actor: 'alice', session: 'session-1' });
    expect(tracked).toHaveLength(1);
    expect(inFlight.size).toBe(0);
  });

  it('runs an upstream tool on an MCP channel to that upstream', async () => {
    const { ctx, calls } = contextOf();
    await callTool(ctx, callOf('refund', { id: 'r1' }));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: 'refund', channel: 'mcp', target: 'up' });
  });

  it('refuses an unknown tool, and a tool while the config is at fault, before anything runs', async () => {
    const unknown = contextOf();
    expect(await callTool(unknown.ctx, callOf('nope', {}))).toEqual({
      error: { code: -32602, message: 'Unknown tool: nope' },
    });
    const faulty = contextOf(LEGACY, { fault: new Error('scope names a tool nobody publishes') });
    expect(codeOf(await callTool(faulty.ctx, callOf('pay', {})))).toBe('IDEM_DENIED');
    expect(unknown.calls.length + faulty.calls.length).toBe(0);
    expect(unknown.tracked.length + faulty.tracked.length).toBe(0);
  });

  it('passes a read-only upstream tool through to its upstream, untouched by the engine', async () => {
    const { ctx, calls, tracked } = contextOf();
    const call = callOf('search', { q: 'x' });
    const answer = await callTool(ctx, call);
    expect(answer).toMatchObject({
      forward: {
        request: { ...call.request, params: { ...call.request.params, name: 'search' } },
        upstream: 'up',
      },
    });
    expect(calls).toHaveLength(0);
    expect(tracked).toHaveLength(0);
  });

  it('refuses arguments against the tool schema before anything is claimed', async () => {
    const { ctx, calls } = contextOf();
    expect(codeOf(await callTool(ctx, callOf('strict', {})))).toBe('IDEM_INVALID_INPUT');
    let deep: unknown = {};
    for (let i = 0; i < 20_000; i++) deep = { deep };
    expect(codeOf(await callTool(ctx, callOf('pay', deep)))).toBe('IDEM_INVALID_INPUT');
    expect(calls).toHaveLength(0);
  });

  it('checks SEP-2243 headers for a 2026-07-28 client only', async () => {
    const headers = { 'mcp-param-region': 'us' };
    const modern = contextOf(MODERN);
    const refused = await callTool(modern.ctx, callOf('routed', { region: 'eu' }, {}, headers));
    expect(refused).toMatchObject({ error: { code: HEADER_MISMATCH } });
    expect(modern.calls).toHaveLength(0);
    // A 2025-era client does not mirror arguments into headers: nothing to check.
    const legacy = contextOf(LEGACY);
    await callTool(legacy.ctx, callOf('routed', { region: 'eu' }, {}, headers));
    expect(legacy.calls).toHaveLength(1);
  });

  it('takes a task request by the client revision rule, and refuses a client that cannot take a required one', async () => {
    const legacy = contextOf(LEGACY);
    expect(await callTool(legacy.ctx, callOf('long', {}))).toMatchObject({ error: { code: -32601 } });
    expect(legacy.calls).toHaveLength(0);
    await callTool(legacy.ctx, callOf('long', {}, { task: { ttl: 60_000 } }));
    expect(legacy.calls[0]?.task).toMatchObject({ generation: 'v1' });
    const modern = contextOf(MODERN);
    expect(await callTool(modern.ctx, callOf('long', {}))).toMatchObject({
      error: { code: expect.any(Number) },
    });
    expect(modern.calls).toHaveLength(0);
  });

  it('answers an upstream JSON-RPC error carried in the result as that error', async () => {
    const error = { code: -32001, message: 'upstream says no' };
    const { ctx } = contextOf(LEGACY, { result: { content: [], _meta: { [JSONRPC_ERROR_META]: error } } });
    expect(await callTool(ctx, callOf('pay', {}))).toEqual({ error });
  });

  it('hands a call that continues an open input round to that round: nothing new is claimed', async () => {
    const rounds = new Map<string, InputRound>();
    const upstream = { name: 'up', era: 'legacy', notify: async () => {} } as unknown as UpstreamConnection;
    const first = contextOf(MODERN, { rounds, upstream });
    // The first call opens a round on its 2025-era upstream, which asks the client a question.
    let finish: (result: CallToolResult) => void = () => {};
    const execution = new Promise<CallToolResult>((resolve) => (finish = resolve));
    first.ctx.engine.execute = (() => execution) as never;
    const call = callOf(
      'refund',
      { id: 'r1' },
      { _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } },
    );
    const answering = callTool(first.ctx, call);
    await new Promise((resolve) => setImmediate(resolve));
    const [round] = [...rounds.values()];
    if (!round) throw new Error('no round opened');
    const asked = round.ask({
      jsonrpc: '2.0',
      id: 9,
      method: 'elicitation/create',
      params: { message: 'sure?' },
    });
    expect(await answering).toMatchObject({
      result: { resultType: 'input_required', requestState: round.token },
    });
    // The client calls again with the answer: the round takes it, and the same execution answers.
    const next = contextOf(MODERN, { rounds, upstream });
    const continuing = callTool(
      next.ctx,
      callOf(
        'refund',
        { id: 'r1' },
        { requestState: round.token, inputResponses: { 'idem-input-1': { action: 'accept' } } },
      ),
    );
    expect(await asked).toMatchObject({ id: 9, result: { action: 'accept' } });
    finish({ content: [{ type: 'text', text: 'refunded' }] });
    expect(await continuing).toEqual({ result: { content: [{ type: 'text', text: 'refunded' }] } });
    expect(next.calls).toHaveLength(0);
    expect(roundOf(rounds, call, 'alice', upstream).continues).toBeUndefined();
  });
});
