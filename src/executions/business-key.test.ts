import { describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import {
  ALICE as alice,
  libraryCall as call,
  engineOnManualClock as setup,
} from '../../test/support/engine-setup.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import { IDEM_CODES } from '../errors.js';
import type { ToolResult } from '../store/outcome.js';
import { type IdemAnswerInfo, idemCodeOf, META } from './answers.js';
import type { Caller } from './call.js';

/**
 * A business key names the action (docs/contracts.md): same tool + same key value is
 * one execution whatever the other arguments; another request under the key
 * gets IDEM_KEY_CONFLICT and is never dispatched.
 */

const bob: Caller = { actor: 'token:bob', session: 's2' };

const perActor: ToolContract = { replay: 'keyed', scope: { business_key: 'order_id' } };
const shared: ToolContract = { replay: 'keyed', scope: { business_key: 'order_id', shared: true } };

const idem = (r: ToolResult) => (r.structuredContent as { idem?: IdemAnswerInfo } | undefined)?.idem;
const refOf = (r: ToolResult) => idem(r)?.ref ?? (r._meta?.[META.executionId] as string | undefined);
const text = (r: ToolResult) => (r.content[0] as { text: string }).text;

const order = { order_id: 'B1', amount: 10, card: 'tok_visa' };
/** The same order id, with the other arguments varied the way the bug report did. */
const variations = [
  { ...order, trace: 'run-2' },
  { ...order, amount: 99 },
  { ...order, card: 'tok_amex' },
  { order_id: 'B1', amount: 10 },
];

/** A target that holds every dispatch until released: "in flight" without guessing at timing. */
function heldTarget() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const target = new CountingTarget({
    respond: async (n) => {
      await gate;
      return { content: [{ type: 'text', text: `done #${n}` }], structuredContent: { n } };
    },
  });
  return { target, release };
}

describe('business key: the key names the action', () => {
  it('five variations under one key → one dispatch; the other four get IDEM_KEY_CONFLICT with its ref', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const first = await engine.execute(call(perActor, order), target.dispatch);
    expect(first.isError).toBeFalsy();
    const ref = refOf(first);

    for (const args of variations) {
      const answer = await engine.execute(call(perActor, args), target.dispatch);
      expect(answer.isError).toBe(true);
      expect(idem(answer)).toMatchObject({ code: IDEM_CODES.IDEM_KEY_CONFLICT, ref, state: 'completed' });
      expect(idem(answer)?.advice).toMatch(/new key/);
      expect(idem(answer)?.advice).toContain('idem_execution_status');
      expect(text(answer)).toContain('NOT executed');
      // The conflict never carries the original's result: it answers another request.
      expect(answer.structuredContent).not.toHaveProperty('n');
    }
    expect(target.invocations).toBe(1);
    expect(await store.list()).toHaveLength(1);

    // The identical call is still the stored replay.
    const again = await engine.execute(
      call(perActor, { card: 'tok_visa', amount: 10.0, order_id: 'B1' }),
      target.dispatch,
    );
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again._meta?.[META.replayed]).toBe(true);
    expect(target.invocations).toBe(1);
  });

  it('a conflict is journaled against the original, as a match that did not attach', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const ref = refOf(await engine.execute(call(perActor, order), target.dispatch));
    await engine.execute(call(perActor, { ...order, amount: 1 }), target.dispatch);
    const conflicts = (await store.journalFor(ref!)).filter((e) => e.detail.conflict !== undefined);
    expect(conflicts).toHaveLength(1);
    expect(conflicts[0]).toMatchObject({
      kind: 'attached',
      actor: alice.actor,
      detail: { state: 'completed', conflict: 'other_arguments' },
    });
  });

  it('while the first is in flight: a variation conflicts (state dispatched), the identical twin is IDEM_IN_FLIGHT', async () => {
    const { engine } = setup();
    const { target, release } = heldTarget();
    const first = engine.execute(call(perActor, order), target.dispatch);
    await vi.waitFor(() => expect(target.invocations === 1).toBe(true), PATIENTLY);

    const variation = await engine.execute(call(perActor, { ...order, amount: 5 }), target.dispatch);
    expect(idem(variation)).toMatchObject({ code: IDEM_CODES.IDEM_KEY_CONFLICT, state: 'dispatched' });
    const twin = await engine.execute(call(perActor, order), target.dispatch);
    expect(idemCodeOf(twin)).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    expect(refOf(variation)).toBe(refOf(twin));

    release();
    const done = await first;
    expect(refOf(done)).toBe(refOf(twin));
    expect(target.invocations).toBe(1);
  });

  it('concurrent variations race on one claim: exactly one dispatch, every other call a conflict or in flight', async () => {
    const { engine } = setup();
    const { target, release } = heldTarget();
    const calls = Array.from({ length: 40 }, (_, i) =>
      engine.execute(call(perActor, { ...order, amount: i % 4 }), target.dispatch),
    );
    await vi.waitFor(() => expect(target.invocations === 1).toBe(true), PATIENTLY);
    release();
    const results = await Promise.all(calls);
    expect(target.invocations).toBe(1);
    const plain = results.filter((r) => !r.isError);
    expect(plain).toHaveLength(1);
    const codes = new Set(results.filter((r) => r.isError).map(idemCodeOf));
    expect(
      [...codes].every((c) => c === IDEM_CODES.IDEM_KEY_CONFLICT || c === IDEM_CODES.IDEM_IN_FLIGHT),
    ).toBe(true);
    expect(codes.has(IDEM_CODES.IDEM_KEY_CONFLICT)).toBe(true);
    expect(new Set(results.map(refOf)).size).toBe(1);
  });

  it('never re-sends a dispatch whose outcome is unknown with the arguments of another request', async () => {
    const { engine, store, clock } = setup();
    // The first dispatch does not answer within its lease: its holder is gone, outcome unknown.
    const { target: hung, release } = heldTarget();
    const contract: ToolContract = { ...perActor, lease: 1000, timeout: 60_000 };
    const first = engine.execute(call(contract, order), hung.dispatch);
    await vi.waitFor(() => expect(hung.invocations === 1).toBe(true), PATIENTLY);
    clock.advance(5000);

    const target = new CountingTarget();
    const variation = await engine.execute(call(contract, { ...order, card: 'tok_amex' }), target.dispatch);
    expect(idem(variation)).toMatchObject({ code: IDEM_CODES.IDEM_KEY_CONFLICT });
    expect(target.invocations).toBe(0);
    // The identical request is the keyed recovery row: re-sent once, with the same key.
    const same = await engine.execute(call(contract, order), target.dispatch);
    expect(same.isError).toBeFalsy();
    expect(target.invocations).toBe(1);
    expect(target.keys).toEqual([refOf(variation)]);
    expect(target.redispatches).toEqual([true]);
    expect(await store.list()).toHaveLength(1);
    release();
    await first;
  });

  it('a failed original frees the key: the identical request and a corrected one are each a new attempt', async () => {
    const { engine } = setup();
    const declined = new CountingTarget({
      respond: () => ({ isError: true, content: [{ type: 'text', text: 'card declined' }] }),
    });
    const first = await engine.execute(call(perActor, order), declined.dispatch);
    expect(first.isError).toBe(true);
    const same = await engine.execute(call(perActor, order), declined.dispatch);
    expect(text(same)).toBe('card declined');
    expect(same._meta?.[META.replayed]).toBeUndefined();
    expect(refOf(same)).not.toBe(refOf(first));
    expect(declined.invocations).toBe(2);

    const target = new CountingTarget();
    const corrected = await engine.execute(call(perActor, { ...order, card: 'tok_amex' }), target.dispatch);
    expect(corrected.isError).toBeFalsy();
    expect(refOf(corrected)).not.toBe(refOf(same));
    expect(target.invocations).toBe(1);
    // Now the corrected one holds the key.
    const late = await engine.execute(call(perActor, order), target.dispatch);
    expect(idem(late)).toMatchObject({ code: IDEM_CODES.IDEM_KEY_CONFLICT, ref: refOf(corrected) });
    expect(target.invocations).toBe(1);
  });

  it('after the attach window the key names a new action', async () => {
    const { engine, clock } = setup();
    const target = new CountingTarget();
    const contract: ToolContract = { ...perActor, attach_window: '1m' };
    const first = await engine.execute(call(contract, order), target.dispatch);
    clock.advance(60_001);
    const later = await engine.execute(call(contract, { ...order, amount: 3 }), target.dispatch);
    expect(later.isError).toBeFalsy();
    expect(refOf(later)).not.toBe(refOf(first));
    expect(target.invocations).toBe(2);
  });

  it('another key is another action', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    await engine.execute(call(perActor, order), target.dispatch);
    const b2 = await engine.execute(call(perActor, { ...order, order_id: 'B2' }), target.dispatch);
    expect(b2.isError).toBeFalsy();
    expect(target.invocations).toBe(2);
  });
});

describe('business key: per actor (default) or shared', () => {
  it('per actor: another actor with the same key is another action', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const a = await engine.execute(call(perActor, order), target.dispatch);
    const b = await engine.execute(call(perActor, order, bob), target.dispatch);
    expect(a.isError).toBeFalsy();
    expect(b.isError).toBeFalsy();
    expect(refOf(a)).not.toBe(refOf(b));
    expect(target.invocations).toBe(2);
  });

  it("shared: another actor's call attaches to the original — a conflict with ref and state, never its result", async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const a = await engine.execute(call(shared, order), target.dispatch);
    const ref = refOf(a);

    for (const args of [order, { ...order, amount: 99 }]) {
      const b = await engine.execute(call(shared, args, bob), target.dispatch);
      expect(b.isError).toBe(true);
      expect(idem(b)).toMatchObject({ code: IDEM_CODES.IDEM_KEY_CONFLICT, ref, state: 'completed' });
      expect(text(b)).toContain('another caller');
      expect(JSON.stringify(b)).not.toContain('done #1');
      expect(b._meta?.[META.replayed]).toBeUndefined();
    }
    expect(target.invocations).toBe(1);
    // The original's own caller still gets its replay.
    const again = await engine.execute(call(shared, order), target.dispatch);
    expect(again.structuredContent).toEqual(a.structuredContent);
    // And the status tool keeps answering only the caller that started it.
    expect(idemCodeOf(await engine.status(ref!, bob.actor))).toBe(IDEM_CODES.IDEM_UNKNOWN_EXECUTION);
    expect((await engine.status(ref!, alice.actor)).isError).toBeFalsy();
  });

  it('shared: while the original is in flight, another actor is told so (state dispatched), and nothing is sent', async () => {
    const { engine } = setup();
    const { target, release } = heldTarget();
    const first = engine.execute(call(shared, order), target.dispatch);
    await vi.waitFor(() => expect(target.invocations === 1).toBe(true), PATIENTLY);
    const b = await engine.execute(call(shared, order, bob), target.dispatch);
    expect(idem(b)).toMatchObject({ code: IDEM_CODES.IDEM_KEY_CONFLICT, state: 'dispatched' });
    release();
    expect(refOf(await first)).toBe(refOf(b));
    expect(target.invocations).toBe(1);
  });

  it('shared: a secret key value is matched by its keyed digest and never stored in clear', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const contract: ToolContract = { ...shared, fingerprint: { secrets: ['order_id'] } };
    await engine.execute(call(contract, { order_id: 'SECRET-ORDER-7', amount: 1 }), target.dispatch);
    const b = await engine.execute(
      call(contract, { order_id: 'SECRET-ORDER-7', amount: 2 }, bob),
      target.dispatch,
    );
    expect(idemCodeOf(b)).toBe(IDEM_CODES.IDEM_KEY_CONFLICT);
    const c = await engine.execute(
      call(contract, { order_id: 'SECRET-ORDER-8', amount: 2 }, bob),
      target.dispatch,
    );
    expect(c.isError).toBeFalsy();
    expect(target.invocations).toBe(2);
    const stored = JSON.stringify([await store.list(), await store.readJournal()]);
    expect(stored).not.toContain('SECRET-ORDER');
  });
});

describe('business key: what is claimed', () => {
  it('the fingerprint names the key; the request digest is the whole request', () => {
    const { engine } = setup();
    const a = engine.identify(call(perActor, order));
    const variation = engine.identify(call(perActor, { ...order, amount: 99 }));
    expect(variation.fingerprint).toBe(a.fingerprint);
    expect(variation.requestDigest).not.toBe(a.requestDigest);
    expect(a.requestDigest).toMatch(/^fp_/);
    expect(a.requestDigest).not.toBe(a.fingerprint);
    // Per actor: another actor names another action. Shared: the same one.
    expect(engine.identify(call(perActor, order, bob)).fingerprint).not.toBe(a.fingerprint);
    const s = engine.identify(call(shared, order));
    expect(engine.identify(call(shared, { ...order, amount: 1 }, bob)).fingerprint).toBe(s.fingerprint);
    expect(s.fingerprint).not.toBe(a.fingerprint);
    // Other scopes: the fingerprint is the whole request, and there is no separate digest.
    expect(engine.identify(call({ replay: 'keyed' }, order)).requestDigest).toBeNull();
  });

  it('a key given by the caller in _meta (a gateway in front) still names the exact request', () => {
    const { engine } = setup();
    const withKey = (args: unknown) => ({ ...call(perActor, args), idempotencyKey: 'exe_upstream_1' });
    const a = engine.identify(withKey(order));
    expect(a.requestDigest).toBeNull();
    expect(engine.identify(withKey({ ...order, amount: 2 })).fingerprint).not.toBe(a.fingerprint);
  });
});
