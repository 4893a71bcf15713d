import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { UpstreamConnection } from '../../dispatch/mcp/index.js';
import { readToolCall } from '../../protocol/tool-call-request.js';
import type { SharedUpstreams } from '../sessions/session-state.js';
import type { ForwardedRequest } from '../tool-calls/call-context.js';
import { type InputRound, roundOf } from './input-round.js';
import { roundAsking } from './input-rounds.js';

/** A call of `tool` as a 2026-07-28 client makes it, continuing the round `requestState` names. */
function callOf(tool: string, args: Record<string, unknown>, requestState?: string, meta?: unknown) {
  return readToolCall({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: tool, arguments: args, _meta: meta, ...(requestState ? { requestState } : {}) },
  } as never);
}

function roundContinued(
  rounds: Map<string, InputRound>,
  actor: string,
  requestState: string,
  tool: string,
  args: Record<string, unknown>,
): InputRound | undefined {
  return roundOf(rounds, callOf(tool, args, requestState), actor, undefined).continues;
}

const legacyUpstream = { name: 'up', era: 'legacy', notify: async () => {} } as unknown as UpstreamConnection;
const ENVELOPE = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };

function setUp() {
  const shared = { rounds: new Map() } as unknown as SharedUpstreams;
  const forwarded: ForwardedRequest = { frontId: 1, upstream: 'up', cancelled: new AbortController() };
  const { round } = roundOf(
    shared.rounds,
    callOf('tool', { key: 'k' }, undefined, ENVELOPE),
    'alice',
    legacyUpstream,
  );
  if (!round) throw new Error('no round opened');
  let finish: (result: CallToolResult) => void = () => {};
  round.run(new Promise<CallToolResult>((resolve) => (finish = resolve)), () => forwarded.cancelled?.abort());
  return { shared, round, forwarded, finish };
}

const elicit = { jsonrpc: '2.0' as const, id: 7, method: 'elicitation/create', params: { message: 'ok?' } };

describe('input rounds (a 2026-07-28 client, a 2025-era upstream asking mid-call)', () => {
  it('holds the upstream request, asks the client, and routes its answer back', async () => {
    const { shared, round } = setUp();
    expect(roundAsking(shared, 'up')).toBe(round);
    const held = round.ask(elicit);
    const next = await round.next();
    expect(next).toEqual({
      inputRequired: {
        resultType: 'input_required',
        inputRequests: { 'idem-input-1': { method: 'elicitation/create', params: { message: 'ok?' } } },
        requestState: round.token,
      },
    });
    round.answer({ 'idem-input-1': { action: 'accept', content: { ok: true } } });
    // The upstream gets the answer under its own request id.
    expect(await held).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { action: 'accept', content: { ok: true } },
    });
  });

  it('answers the call with the execution once it finishes, and then the round is gone', async () => {
    const { shared, round, finish } = setUp();
    const next = round.next();
    finish({ content: [{ type: 'text', text: 'done' }] });
    expect(await next).toEqual({ final: { content: [{ type: 'text', text: 'done' }] } });
    expect(roundContinued(shared.rounds, 'alice', round.token, 'tool', { key: 'k' })).toBeUndefined();
    expect(shared.rounds.size).toBe(0);
  });

  it('is continued only by the same actor, tool and arguments', () => {
    const { shared, round } = setUp();
    const { rounds } = shared;
    expect(roundContinued(rounds, 'alice', round.token, 'tool', { key: 'k' })).toBe(round);
    expect(roundContinued(rounds, 'mallory', round.token, 'tool', { key: 'k' })).toBeUndefined();
    expect(roundContinued(rounds, 'alice', round.token, 'other', { key: 'k' })).toBeUndefined();
    expect(roundContinued(rounds, 'alice', round.token, 'tool', { key: 'else' })).toBeUndefined();
    expect(roundContinued(rounds, 'alice', 'idem-round:guessed', 'tool', { key: 'k' })).toBeUndefined();
  });

  it('refuses what the client did not declare, and answers what is still held when the call ends', async () => {
    const { round, finish } = setUp();
    const sampling = await round.ask({ jsonrpc: '2.0', id: 8, method: 'sampling/createMessage', params: {} });
    expect(sampling).toMatchObject({ id: 8, error: { code: -32601 } });
    const held = round.ask(elicit);
    finish({ content: [] });
    expect(await held).toMatchObject({ id: 7, error: { code: -32000 } });
  });

  it('a client closing a later round cancels the call itself', () => {
    const { round, forwarded } = setUp();
    round.cancel();
    expect(forwarded.cancelled?.signal.aborted).toBe(true);
  });
});
