import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { withFaults } from '../../test/support/faulty-store.js';
import { manualClock } from '../../test/support/gate.js';
import { resolveContract, type ToolContract } from '../contracts/contract.js';
import { IDEM_CODES, StoreUnavailableError } from '../errors.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ToolResult } from '../store/outcome.js';
import { idemCodeOf, META } from './answers.js';
import type { Approver, Caller, ToolCall } from './call.js';
import { ExecutionEngine } from './engine.js';

/** The engine's side of approvals (docs/approvals.md), on the memory store; time moves only when the test says. */
const fingerprinter = new Fingerprinter(randomBytes(32));
const alice: Caller = { actor: 'token:alice', session: 's1' };
const approveEveryCall: ToolContract = {
  replay: 'keyed',
  approval: 'every_call',
  attach_window: '1h',
  approval_timeout: '10m',
};

function setup(options: { approver?: Approver; store?: MemoryStore } = {}) {
  const clock = manualClock();
  const store = options.store ?? new MemoryStore({ clock: clock.now });
  const engine = new ExecutionEngine({
    store,
    fingerprinter,
    clock: clock.now,
    ...(options.approver ? { approver: options.approver } : {}),
  });
  return { store, engine, clock, target: new CountingTarget() };
}

function call(
  contract: ToolContract,
  args: unknown,
  caller: Caller = alice,
  extra: Partial<ToolCall> = {},
): ToolCall {
  return {
    tool: 'deploy',
    channel: 'http',
    target: 'deploy-api',
    credentialRef: 'deploy-token',
    method: 'tools/call',
    arguments: args,
    contract: resolveContract(contract, undefined),
    caller,
    ...extra,
  };
}

const refOf = (r: ToolResult) => r._meta?.[META.executionId] as string;

describe('approvals in the engine', () => {
  it('an operator approval lets the next identical call run it once; the status tool says so meanwhile', async () => {
    const { engine, store, target } = setup();
    const c = call(approveEveryCall, { app: 'web' });
    const first = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(first)).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    const ref = refOf(first);
    const request = await store.getApproval(ref);
    expect(request).toMatchObject({ channel: 'http', target: 'deploy-api', credentialRef: 'deploy-token' });
    expect(await engine.approve(ref, 'operator:bob', 'cli')).toMatchObject({ state: 'authorized' });
    expect(idemCodeOf(await engine.status(ref, alice.actor))).toBe(IDEM_CODES.IDEM_APPROVED);
    expect(target.invocations).toBe(0);
    // Retries race for it, from other sessions: one dispatch.
    const results = await Promise.all(
      ['s2', 's3', 's4'].map((session) =>
        engine.execute(call(approveEveryCall, { app: 'web' }, { ...alice, session }), target.dispatch),
      ),
    );
    expect(target.invocations).toBe(1);
    expect(target.keys).toEqual([ref]);
    expect(results.map(refOf)).toEqual([ref, ref, ref]);
    // A second approval is no approval: it authorises one execution, which has run.
    expect(await engine.approve(ref, 'operator:bob')).toBeUndefined();
  });

  it('expiry by the store clock: a retry after it is denied as expired; a late approval is refused', async () => {
    const { engine, store, clock, target } = setup();
    const c = call(approveEveryCall, { app: 'api' });
    const ref = refOf(await engine.execute(c, target.dispatch));
    clock.advance(10 * 60_000 - 1);
    expect(idemCodeOf(await engine.execute(c, target.dispatch))).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    clock.advance(1);
    const late = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(late)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(refOf(late)).toBe(ref);
    expect((late.content[0] as { text: string }).text).toContain('expired');
    expect(await engine.approve(ref, 'operator:bob')).toBeUndefined();
    expect(await store.getApproval(ref)).toMatchObject({ decision: 'expired', decidedVia: 'expiry' });
    const denied = (await store.journalFor(ref)).filter((e) => e.kind === 'denied');
    expect(denied.map((e) => e.detail)).toEqual([{ by: 'idem', via: 'expiry', reason: 'expired' }]);
    expect(target.invocations).toBe(0);
  });

  it('approval_timeout longer than attach_window is refused: a retry would no longer find the request', () => {
    expect(() =>
      resolveContract({ replay: 'keyed', attach_window: '5m', approval_timeout: '10m' }, undefined),
    ).toThrow('approval_timeout must not be longer than attach_window');
  });

  it('an approver that decides journals who and how; one that throws leaves the request in the queue', async () => {
    const decide: Approver = async (request) =>
      request.arguments.includes('no')
        ? { decision: 'denied', by: 'token:alice', via: 'elicitation', reason: 'not now' }
        : Promise.reject(new Error('client went away'));
    const { engine, store, target } = setup({ approver: decide });
    const denied = await engine.execute(call(approveEveryCall, { app: 'no' }), target.dispatch);
    expect(idemCodeOf(denied)).toBe(IDEM_CODES.IDEM_DENIED);
    const event = (await store.journalFor(refOf(denied))).find((e) => e.kind === 'denied');
    expect(event?.detail).toEqual({ by: 'token:alice', via: 'elicitation', reason: 'not now' });
    const queued = await engine.execute(call(approveEveryCall, { app: 'yes' }), target.dispatch);
    expect(idemCodeOf(queued)).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    expect((await store.listApprovals({ pending: true })).map((r) => r.executionId)).toEqual([refOf(queued)]);
    expect(target.invocations).toBe(0);
  });

  it('an approver answer that is no decision leaves the request in the queue', async () => {
    const { engine, target } = setup({ approver: async () => ({ decision: 'maybe' }) as never });
    const result = await engine.execute(call(approveEveryCall, { app: 'odd' }), target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    expect(target.invocations).toBe(0);
  });

  it('the approver is shown what it needs, never a secret', async () => {
    const seen: Parameters<Approver>[0][] = [];
    const { engine, target } = setup({
      approver: async (request) => {
        seen.push(request);
        return 'approved';
      },
    });
    const contract: ToolContract = { ...approveEveryCall, fingerprint: { secrets: ['token'] } };
    const done = await engine.execute(
      call(contract, { app: 'web', token: 'sk_live_SECRET' }),
      target.dispatch,
    );
    expect(done.structuredContent).toEqual({ n: 1 });
    expect(seen[0]).toMatchObject({
      ref: refOf(done),
      tool: 'deploy',
      actor: 'token:alice',
      session: 's1',
      channel: 'http',
      target: 'deploy-api',
      credential: 'deploy-token',
      earlier: null,
      policy: 'every_call',
    });
    expect(seen[0]?.fingerprint).toMatch(/^fp_/);
    expect(JSON.stringify(seen)).not.toContain('sk_live_SECRET');
  });

  it('a target or credential the channel could not resolve: denied with the reason, nothing claimed', async () => {
    const { engine, store, target } = setup({ approver: async () => 'approved' });
    const result = await engine.execute(
      call(approveEveryCall, { app: 'web' }, alice, { unresolved: 'no credential named "deploy-token"' }),
      target.dispatch,
    );
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_DENIED);
    expect((result.content[0] as { text: string }).text).toContain('no credential named "deploy-token"');
    expect(await store.list()).toEqual([]);
    const [event] = await store.readJournal();
    expect(event).toMatchObject({ kind: 'denied', executionId: null, detail: { ladder: 'unresolved' } });
    expect(target.invocations).toBe(0);
  });

  it('the store down at the ladder: not executed, safe to retry', async () => {
    const clock = manualClock();
    const store = withFaults(new MemoryStore({ clock: clock.now }), {
      sessionApproved: () => Promise.reject(new StoreUnavailableError('down')),
    });
    const engine = new ExecutionEngine({
      store,
      fingerprinter,
      clock: clock.now,
      logger: { warn() {}, error() {} },
    });
    const target = new CountingTarget();
    const result = await engine.execute(call({ replay: 'keyed', approval: 'session' }, {}), target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(target.invocations).toBe(0);
  });

  it('session approvals live in the store: another engine (process) on it honours them; allowlisted actors never ask', async () => {
    const sessionPolicy: ToolContract = { replay: 'keyed', approval: 'session', allow_actors: ['token:ci'] };
    let asked = 0;
    const approver: Approver = async () => {
      asked++;
      return 'approved';
    };
    const a = setup({ approver });
    const b = setup({ approver, store: a.store });
    await a.engine.execute(call(sessionPolicy, { n: 1 }), a.target.dispatch);
    await b.engine.execute(call(sessionPolicy, { n: 2 }), b.target.dispatch);
    expect(asked).toBe(1);
    await b.engine.execute(call(sessionPolicy, { n: 3 }, { ...alice, session: 's2' }), b.target.dispatch);
    expect(asked).toBe(2);
    await b.engine.execute(
      call(sessionPolicy, { n: 4 }, { actor: 'token:ci', session: 's9' }),
      b.target.dispatch,
    );
    expect(asked).toBe(2);
    expect(a.target.invocations + b.target.invocations).toBe(4);
    const accepted = (await a.store.readJournal())
      .filter((e) => e.kind === 'accepted')
      .map((e) => e.detail.ladder);
    expect(accepted).toEqual(['session', 'session_approved', 'session', 'allowlisted_actor']);
  });

  it('an approval request names the earlier execution of the same intent it replaces', async () => {
    const { engine, store, clock, target } = setup({ approver: async () => 'approved' });
    const c = call(approveEveryCall, { app: 'web' });
    const first = refOf(await engine.execute(c, target.dispatch));
    clock.advance(60 * 60_000);
    const second = refOf(await engine.execute(c, target.dispatch));
    expect(second).not.toBe(first);
    expect((await store.getApproval(second))?.earlier).toBe(first);
    expect(target.invocations).toBe(2);
  });
});
