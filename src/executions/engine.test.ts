import { describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import {
  ALICE as alice,
  libraryCall as call,
  engineOnManualClock as setup,
} from '../../test/support/engine-setup.js';
import { withFaults } from '../../test/support/faulty-store.js';
import { Gate, manualClock } from '../../test/support/gate.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import { IDEM_CODES, NotDispatchedError, OutcomeUnknownError, StoreUnavailableError } from '../errors.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionStore } from '../store/types.js';
import { idemCodeOf, META } from './answers.js';
import type { ToolCall } from './call.js';
import type { ExecutionEngine } from './engine.js';

const ref = (r: ToolResult) =>
  (r.structuredContent as { idem?: { ref: string } } | undefined)?.idem?.ref ?? r._meta?.[META.executionId];
const text = (r: ToolResult) => (r.content[0] as { text: string }).text;
/** The stored result's own text: a replay puts Idem's note before it. */
const storedText = (r: ToolResult) => (r.content.at(-1) as { text: string }).text;

/** What CountingTarget answers by default, for a target held by a Gate. */
const done = (n: number): ToolResult => ({
  content: [{ type: 'text', text: `done #${n}` }],
  structuredContent: { n },
});

const keyed: ToolContract = { replay: 'keyed', scope: { business_key: 'order_id' } };
const statusClass: ToolContract = { replay: 'status', scope: { business_key: 'order_id' }, lease: 150 };
const order = { order_id: 'o-1', amount_cents: 1250 };

/** A record left behind by a process that died at a given point. */
async function orphan(
  store: ExecutionStore,
  engine: ExecutionEngine,
  c: ToolCall,
  state: 'accepted' | 'dispatched',
) {
  const { fingerprint, requestDigest } = engine.identify(c);
  const id = `exe_orphan_${state}`;
  const claim = await store.claim({
    id,
    fingerprint,
    requestDigest,
    actor: c.caller.actor,
    tool: c.tool,
    session: c.caller.session,
    replay: c.contract.replay,
    state: 'accepted',
    attachWindowMs: c.contract.attachWindowMs,
    claimToken: 'dead-process-token',
    leaseOwner: 'dead-process',
    leaseMs: 100,
    argumentsPreview: '{}',
  });
  expect(claim.won).toBe(true);
  if (state === 'dispatched') {
    await store.transition({
      id,
      from: ['accepted'],
      to: 'dispatched',
      token: 'dead-process-token',
      holder: { token: 'dead-process-token', owner: 'dead-process', leaseMs: 100 },
      dispatchTimeoutMs: 60_000,
    });
  }
  return id;
}

describe('ExecutionEngine — concurrent identical calls', () => {
  it('runs a slow target once; the concurrent twin gets IDEM_IN_FLIGHT, a later repeat the stored result', async () => {
    const { engine } = setup();
    const gate = new Gate();
    const target = new CountingTarget({ respond: (n) => gate.wait().then(() => done(n)) });
    const first = engine.execute(call(keyed, order), target.dispatch);
    await gate.started;
    const second = await engine.execute(call(keyed, order), target.dispatch);
    expect(idemCodeOf(second)).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    gate.open();
    const firstResult = await first;
    expect(firstResult.isError).toBeFalsy();
    expect(ref(second)).toBe(ref(firstResult));
    expect(text(second)).toContain('idem_execution_status');

    const third = await engine.execute(call(keyed, { amount_cents: 1250, order_id: 'o-1' }), target.dispatch);
    expect(third.structuredContent).toEqual(firstResult.structuredContent);
    expect(third._meta?.[META.replayed]).toBe(true);
    expect(target.invocations).toBe(1);
  });

  it('200 concurrent identical calls → 1 invocation', async () => {
    const { engine, store } = setup();
    const gate = new Gate();
    const target = new CountingTarget({ respond: (n) => gate.wait().then(() => done(n)) });
    let answered = 0;
    const pending = Array.from({ length: 200 }, () =>
      engine.execute(call(keyed, order), target.dispatch).then((r) => {
        answered++;
        return r;
      }),
    );
    // The one that runs is held until every twin has had its answer.
    await vi.waitFor(() => expect(answered).toBe(199), PATIENTLY);
    gate.open();
    const results = await Promise.all(pending);
    expect(target.invocations).toBe(1);
    const codes = results.map((r) => idemCodeOf(r) ?? 'result');
    expect(codes.filter((c) => c === 'result')).toHaveLength(1);
    expect(codes.filter((c) => c === IDEM_CODES.IDEM_IN_FLIGHT)).toHaveLength(199);
    expect(await store.list()).toHaveLength(1);
  });
});

describe('ExecutionEngine — the matching table (docs/lifecycle.md, step 7)', () => {
  it('accepted, never dispatched, claimer gone: that same execution proceeds, once', async () => {
    const { engine, store, clock } = setup();
    const c = call(statusClass, order);
    const id = await orphan(store, engine, c, 'accepted');
    const target = new CountingTarget();
    // Lease still alive: somebody may be about to dispatch it.
    expect(idemCodeOf(await engine.execute(c, target.dispatch))).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    clock.advance(150);
    const result = await engine.execute(c, target.dispatch);
    expect(result.isError).toBeFalsy();
    expect(result._meta?.[META.executionId]).toBe(id);
    expect(target.keys).toEqual([id]);
    expect((await store.get(id))?.state).toBe('completed');
    await engine.execute(c, target.dispatch);
    expect(target.invocations).toBe(1);
  });

  it('awaiting_approval: the original record, no new prompt, nothing dispatched; approval lets it run once', async () => {
    let prompts = 0;
    const { engine, store } = setup({
      approver: async () => {
        prompts++;
        return 'pending';
      },
    });
    const target = new CountingTarget();
    const c = call({ ...keyed, approval: 'every_call' }, order);
    const first = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(first)).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    const again = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(again)).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    expect(ref(again)).toBe(ref(first));
    expect(prompts).toBe(1);
    expect(target.invocations).toBe(0);
    expect(await store.list()).toHaveLength(1);

    await engine.approve(ref(first) as string, 'operator:bob');
    const run = await engine.execute(c, target.dispatch);
    expect(run.isError).toBeFalsy();
    expect(run._meta?.[META.executionId]).toBe(ref(first));
    await engine.execute(c, target.dispatch);
    expect(target.invocations).toBe(1);
  });

  it('denied: the same denial, nothing dispatched', async () => {
    const { engine } = setup({ approver: async () => 'denied' });
    const target = new CountingTarget();
    const c = call({ ...keyed, approval: 'every_call' }, order);
    const first = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(first)).toBe(IDEM_CODES.IDEM_DENIED);
    const again = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(again)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(ref(again)).toBe(ref(first));
    expect(target.invocations).toBe(0);
  });

  it('operator denial of a queued execution is what later retries see', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const c = call({ ...keyed, approval: 'every_call' }, order);
    const first = await engine.execute(c, target.dispatch);
    await engine.deny(ref(first) as string, 'operator:bob', 'amount too large');
    const again = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(again)).toBe(IDEM_CODES.IDEM_DENIED);
    expect(text(again)).toContain('amount too large');
    expect(target.invocations).toBe(0);
  });

  it('session approval: asked once per session, then runs', async () => {
    let prompts = 0;
    const { engine } = setup({
      approver: async () => {
        prompts++;
        return 'approved';
      },
    });
    const target = new CountingTarget();
    const contract: ToolContract = { ...keyed, approval: 'session' };
    expect((await engine.execute(call(contract, order), target.dispatch)).isError).toBeFalsy();
    expect(
      (await engine.execute(call(contract, { ...order, order_id: 'o-2' }), target.dispatch)).isError,
    ).toBeFalsy();
    expect(prompts).toBe(1);
    await engine.execute(
      call(contract, { ...order, order_id: 'o-3' }, { actor: 'token:alice', session: 's2' }),
      target.dispatch,
    );
    expect(prompts).toBe(2);
    expect(target.invocations).toBe(3);
  });

  it('dispatched, lease expired, no probe: IDEM_OUTCOME_UNKNOWN with the ref — never a second dispatch', async () => {
    const { engine, store, clock } = setup();
    const c = call(statusClass, order);
    const id = await orphan(store, engine, c, 'dispatched');
    const target = new CountingTarget();
    expect(idemCodeOf(await engine.execute(c, target.dispatch))).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    clock.advance(150);
    const result = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    expect(ref(result)).toBe(id);
    expect(text(result)).not.toMatch(/\bfailed\b/i);
    expect((await store.get(id))?.state).toBe('unknown');
    expect(idemCodeOf(await engine.execute(c, target.dispatch))).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    expect(target.invocations).toBe(0);
  });

  it('dispatched, lease expired, keyed: re-sent once with the same key', async () => {
    const { engine, store, clock } = setup();
    const c = call({ ...keyed, lease: 100 }, order);
    const id = await orphan(store, engine, c, 'dispatched');
    clock.advance(150);
    const target = new CountingTarget();
    const result = await engine.execute(c, target.dispatch);
    expect(result.isError).toBeFalsy();
    expect(target.keys).toEqual([id]);
    expect(target.redispatches).toEqual([true]);
    await engine.execute(c, target.dispatch);
    expect(target.invocations).toBe(1);
  });

  it('dispatched, lease expired, with a status probe: the probe settles it', async () => {
    const { engine, store, clock } = setup();
    let probed = 0;
    const contract: ToolContract = {
      ...statusClass,
      status_probe: async () => {
        probed++;
        return {
          outcome: 'completed',
          result: { content: [{ type: 'text', text: 'charged (found by probe)' }] },
        };
      },
    };
    const c = call(contract, order);
    engine.registerContract('charge_card', c.contract);
    const id = await orphan(store, engine, c, 'dispatched');
    clock.advance(150);
    const target = new CountingTarget();
    const result = await engine.execute(c, target.dispatch);
    expect(storedText(result)).toBe('charged (found by probe)');
    expect(result._meta?.[META.replayed]).toBe(true);
    expect((await store.get(id))?.state).toBe('completed');
    expect(probed).toBe(1);
    expect(target.invocations).toBe(0);
  });

  it('unknown on an irreversible (review) tool: IDEM_REVIEW_REQUIRED until an operator resolves it', async () => {
    const { engine, store, clock } = setup();
    const c = call({ replay: 'review', lease: 100 }, order);
    const id = await orphan(store, engine, c, 'dispatched');
    clock.advance(150);
    const target = new CountingTarget();
    const result = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_REVIEW_REQUIRED);
    expect(idemCodeOf(await engine.execute(c, target.dispatch))).toBe(IDEM_CODES.IDEM_REVIEW_REQUIRED);
    await engine.resolve(id, 'completed', 'operator:bob', 'processor shows the charge');
    const after = await engine.execute(c, target.dispatch);
    expect(after.isError).toBe(false);
    expect(storedText(after)).toContain('processor shows the charge');
    expect(target.invocations).toBe(0);
  });

  it('a timeout makes the dispatch unknown for the caller; the real outcome is recorded when it arrives', async () => {
    const { engine, store } = setup();
    // The target answers only when the test lets it: the (real) 100 ms timeout always comes first.
    const gate = new Gate();
    const target = new CountingTarget({ respond: (n) => gate.wait().then(() => done(n)) });
    const c = call({ ...statusClass, timeout: 100 }, order);
    const result = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    const id = ref(result) as string;
    expect((await store.get(id))?.state).toBe('unknown');
    expect(idemCodeOf(await engine.status(id, alice.actor))).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    gate.open();
    await vi.waitFor(async () => expect((await store.get(id))?.state).toBe('completed'), PATIENTLY);
    const status = await engine.status(id, alice.actor);
    expect(status.isError).toBeFalsy();
    expect(status.structuredContent).toEqual({ n: 1 });
    expect(target.invocations).toBe(1);
  });

  it('a handler that does not know (OutcomeUnknownError) makes it unknown, not failed', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget({
      respond: () => {
        throw new OutcomeUnknownError('processor connection reset after send');
      },
    });
    const result = await engine.execute(call(statusClass, order), target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    expect((await store.get(ref(result) as string))?.state).toBe('unknown');
  });

  it('completed: the stored result, marked as a replay, delivery recorded', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const first = await engine.execute(call(keyed, order), target.dispatch);
    const id = first._meta?.[META.executionId] as string;
    expect((await store.get(id))?.deliveredAt).not.toBeNull();
    // Another session (a reconnected agent, whose answer was lost): the result it waits for.
    const again = await engine.execute(call(keyed, order, { ...alice, session: 's2' }), target.dispatch);
    expect(again._meta?.[META.replayed]).toBe(true);
    // The note that tells the model it is a replay first; then the original content, as it was.
    expect(again.content.slice(1)).toEqual(first.content);
    expect(text(again)).toContain(`Replayed, not run again: below is the stored result of execution ${id}`);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(target.invocations).toBe(1);
  });

  it('failed (the target answered with a failure): a new request is a new attempt, linked to the failed one', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget({
      respond: (n) =>
        n === 1
          ? { isError: true, content: [{ type: 'text', text: `card declined #${n}` }] }
          : { content: [{ type: 'text', text: `charged #${n}` }] },
    });
    const first = await engine.execute(call(keyed, order), target.dispatch);
    expect(first.isError).toBe(true);
    const again = await engine.execute(call(keyed, order), target.dispatch);
    expect(text(again)).toBe('charged #2');
    expect(target.invocations).toBe(2);
    const failed = ref(first) as string;
    const next = ref(again) as string;
    expect(next).not.toBe(failed);
    const links = (id: string) =>
      store.journalFor(id).then((entries) => entries.filter((e) => e.kind === 'repeat').map((e) => e.detail));
    expect(await links(failed)).toEqual([{ repeated_by: next, reason: 'after_failure' }]);
    expect(await links(next)).toEqual([{ repeat_of: failed, reason: 'after_failure' }]);
    // Once it succeeded, the next identical call is a retry again.
    await engine.execute(call(keyed, order), target.dispatch);
    expect(target.invocations).toBe(2);
  });

  it('failed, under after_failure: replay: the same failure; a corrected call conflicts', async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: (n) => ({ isError: true, content: [{ type: 'text', text: `card declined #${n}` }] }),
    });
    const keepsFailures: ToolContract = { ...keyed, after_failure: 'replay' };
    const first = await engine.execute(call(keepsFailures, order), target.dispatch);
    expect(first.isError).toBe(true);
    const again = await engine.execute(call(keepsFailures, order), target.dispatch);
    expect(again.content.some((c) => (c as { text: string }).text === 'card declined #1')).toBe(true);
    expect(again._meta?.[META.replayed]).toBe(true);
    const corrected = await engine.execute(
      call(keepsFailures, { ...order, amount_cents: 999 }),
      target.dispatch,
    );
    expect(idemCodeOf(corrected)).toBe(IDEM_CODES.IDEM_KEY_CONFLICT);
    expect(target.invocations).toBe(1);
  });

  it('a thrown handler error is a failure: a new request is a new attempt', async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: () => {
        throw new Error('validation failed at the processor');
      },
    });
    const first = await engine.execute(call(keyed, order), target.dispatch);
    expect(first.isError).toBe(true);
    expect(text(first)).toContain('validation failed');
    await engine.execute(call(keyed, order), target.dispatch);
    expect(target.invocations).toBe(2);
  });

  it('after_completion: new — a repeat after a delivered result is a deliberate new action', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const deploy: ToolContract = { replay: 'keyed', after_completion: 'new' };
    await engine.execute(
      call(deploy, { service: 'api', version: '1.2.3' }, alice, 'deploy'),
      target.dispatch,
    );
    await engine.execute(
      call(deploy, { service: 'api', version: '1.2.3' }, alice, 'deploy'),
      target.dispatch,
    );
    expect(target.invocations).toBe(2);
  });

  it('outside the attach window a repeat is a new execution', async () => {
    const { engine, clock } = setup();
    const target = new CountingTarget();
    const c = call({ ...keyed, attach_window: 100 }, order);
    const a = await engine.execute(c, target.dispatch);
    clock.advance(150);
    const b = await engine.execute(c, target.dispatch);
    expect(target.invocations).toBe(2);
    expect(b._meta?.[META.executionId]).not.toBe(a._meta?.[META.executionId]);
  });

  it('different business key, different actor or session-scoped different session → separate executions', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    await engine.execute(call(keyed, order), target.dispatch);
    await engine.execute(call(keyed, { ...order, order_id: 'o-2' }), target.dispatch);
    await engine.execute(call(keyed, order, { actor: 'token:mallory', session: 's1' }), target.dispatch);
    expect(target.invocations).toBe(3);
    const perSession: ToolContract = { replay: 'keyed', scope: 'session' };
    await engine.execute(call(perSession, order, { actor: 'token:alice', session: 'a' }), target.dispatch);
    await engine.execute(call(perSession, order, { actor: 'token:alice', session: 'b' }), target.dispatch);
    await engine.execute(call(perSession, order, { actor: 'token:alice', session: 'b' }), target.dispatch);
    expect(target.invocations).toBe(5);
  });

  it('read-only tools are not deduplicated', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    await engine.execute(call({ replay: 'read_only' }, {}), target.dispatch);
    await engine.execute(call({ replay: 'read_only' }, {}), target.dispatch);
    expect(target.invocations).toBe(2);
    expect(target.keys).toEqual([null, null]);
    expect(await store.list()).toHaveLength(0);
  });
});

describe('ExecutionEngine — identity and fail-closed', () => {
  it('the claim binds the arguments: mutating them in the handler does not change the intent', async () => {
    const { engine } = setup();
    const args = { order_id: 'o-1', amount_cents: 1250, note: 'x' };
    let calls = 0;
    const dispatch = async () => {
      calls++;
      args.amount_cents = 1;
      args.note = 'mutated';
      return { content: [{ type: 'text' as const, text: 'ok' }] };
    };
    await engine.execute(call(keyed, args), dispatch);
    const again = await engine.execute(
      call(keyed, { order_id: 'o-1', amount_cents: 1250, note: 'x' }),
      dispatch,
    );
    expect(again._meta?.[META.replayed]).toBe(true);
    expect(calls).toBe(1);
  });

  it('store down: IDEM_NOT_EXECUTED, safe to retry, nothing dispatched', async () => {
    const down = async (): Promise<never> => {
      throw new StoreUnavailableError('disk I/O error');
    };
    const broken = withFaults(new MemoryStore(), {
      findActive: down,
      claim: down,
      transition: down,
      appendEvents: down,
    });
    const { engine } = setup({ store: broken });
    const target = new CountingTarget();
    const result = await engine.execute(call(keyed, order), target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(text(result)).toContain('safe to retry');
    expect(target.invocations).toBe(0);
  });

  it('the intent cannot be written (disk full): not dispatched, and the retry runs it once', async () => {
    const store = new MemoryStore();
    let failNext = true;
    const flaky = withFaults(store, {
      claim: async (input, options) => {
        if (failNext) {
          failNext = false;
          throw new StoreUnavailableError('database or disk is full');
        }
        return store.claim(input, options);
      },
    });
    const { engine } = setup({ store: flaky });
    const target = new CountingTarget();
    const c = call(keyed, order);
    const refused = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(text(refused)).toContain('safe to retry');
    expect(target.invocations).toBe(0);
    expect(await store.list()).toHaveLength(0);
    expect((await engine.execute(c, target.dispatch)).isError).toBeFalsy();
    expect(target.invocations).toBe(1);
  });

  it('approved, but the dispatch mark cannot be written: not dispatched; a later retry runs it once', async () => {
    const time = manualClock();
    const store = new MemoryStore({ clock: time.now });
    let failNext = true;
    const flaky = withFaults(store, {
      transition: async (t) => {
        if (failNext && t.to === 'dispatched') {
          failNext = false;
          throw new StoreUnavailableError('database is locked');
        }
        return store.transition(t);
      },
    });
    const { engine, clock } = setup({ store: flaky, clock: time, approver: async () => 'approved' });
    const target = new CountingTarget();
    const c = call({ ...keyed, approval: 'every_call', lease: 100 }, order);
    expect(idemCodeOf(await engine.execute(c, target.dispatch))).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(target.invocations).toBe(0);
    clock.advance(150);
    expect((await engine.execute(c, target.dispatch)).isError).toBeFalsy();
    expect(target.invocations).toBe(1);
  });

  it('store down while attaching to an execution that was dispatched: unknown, never "not executed"', async () => {
    const clock = manualClock();
    const store = new MemoryStore({ clock: clock.now });
    const c = call(statusClass, order);
    const { engine: healthy } = setup({ store, clock });
    const id = await orphan(store, healthy, c, 'dispatched');
    clock.advance(150);
    const broken = withFaults(store, {
      transition: async () => {
        throw new StoreUnavailableError('database is locked');
      },
    });
    const { engine } = setup({ store: broken, clock });
    const target = new CountingTarget();
    const result = await engine.execute(c, target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_OUTCOME_UNKNOWN);
    expect(ref(result)).toBe(id);
    expect(target.invocations).toBe(0);
  });

  it('a dispatch that provably sent nothing: IDEM_NOT_EXECUTED, retired, and a retry is a fresh attempt', async () => {
    const { engine, store } = setup();
    let down = true;
    const target = new CountingTarget();
    const dispatch = async (ctx: Parameters<typeof target.dispatch>[0]) => {
      if (down) throw new NotDispatchedError('the upstream is restarting');
      return target.dispatch(ctx);
    };
    const refused = await engine.execute(call(keyed, order), dispatch);
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(text(refused)).toContain('safe to retry');
    const first = ref(refused) as string;
    expect(await store.get(first)).toMatchObject({ state: 'failed' });
    down = false;
    const retry = await engine.execute(call(keyed, order), dispatch);
    expect(retry.isError).toBeFalsy();
    expect(retry._meta?.[META.executionId]).not.toBe(first);
    expect(target.invocations).toBe(1);
  });

  it('arguments that cannot be identified get IDEM_INVALID_INPUT and nothing runs', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 200; i++) deep = [deep];
    const result = await engine.execute(call(keyed, { order_id: 'o-1', deep }), target.dispatch);
    expect(idemCodeOf(result)).toBe(IDEM_CODES.IDEM_INVALID_INPUT);
    expect(text(result)).toContain('too_deep');
    const missingKey = await engine.execute(call(keyed, { amount_cents: 5 }), target.dispatch);
    expect(idemCodeOf(missingKey)).toBe(IDEM_CODES.IDEM_INVALID_INPUT);
    expect(target.invocations).toBe(0);
  });

  it('the status tool shows an execution only to its own actor', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const first = await engine.execute(call(keyed, order), target.dispatch);
    const id = first._meta?.[META.executionId] as string;
    expect(idemCodeOf(await engine.status(id, 'token:mallory'))).toBe(IDEM_CODES.IDEM_UNKNOWN_EXECUTION);
    expect((await engine.status(id, alice.actor)).content.slice(1)).toEqual(first.content);
  });
});
