import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { ALICE, libraryCall as call } from '../../test/support/engine-setup.js';
import { withFaults } from '../../test/support/faulty-store.js';
import { manualClock } from '../../test/support/gate.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import { StoreUnavailableError } from '../errors.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionStore } from '../store/types.js';
import { idemCodeOf, META } from './answers.js';
import { ExecutionEngine } from './engine.js';

/**
 * An outcome the process holds when the store blinks (issue 44 item 5): the caller is answered
 * at once, and the outcome is written once the store answers — journaled as late — so that a
 * retry finds it, in this process or another. Never written over an operator's resolution, and
 * never a second dispatch.
 */
const review: ToolContract = { replay: 'review', scope: { business_key: 'order_id' }, lease: 1_000 };
const order = { order_id: 'o-1' };
const fingerprinter = new Fingerprinter(randomBytes(32));

/**
 * One memory store, seen by two engines (two processes of a fleet), whose holder writes — an
 * outcome, a lease renewal: writes with a claim token — fail while `down` is set.
 */
function fleet() {
  const clock = manualClock();
  const store = new MemoryStore({ clock: clock.now });
  const blink = { down: false };
  const unavailable = () => new StoreUnavailableError('the store does not answer');
  const flaky: ExecutionStore = withFaults(store, {
    transition: (input) =>
      blink.down && input.token ? Promise.reject(unavailable()) : store.transition(input),
    renewLease: (...args) => (blink.down ? Promise.reject(unavailable()) : store.renewLease(...args)),
  });
  const engine = (s: ExecutionStore) => new ExecutionEngine({ store: s, fingerprinter, clock: clock.now });
  const target = new CountingTarget({
    respond: (n) => {
      // The store goes down while the target works: the outcome comes back to a store that does not answer.
      blink.down = true;
      return { content: [{ type: 'text', text: `charged #${n}` }] };
    },
  });
  return { clock, store, blink, here: engine(flaky), there: engine(store), target };
}

const refOf = (r: ToolResult) => r._meta?.[META.executionId] as string;

describe('an outcome the store did not take', () => {
  it('is answered at once, and written once the store answers, journaled as late', async () => {
    const { store, blink, here, target } = fleet();
    const first = await here.execute(call(review, order), target.dispatch);
    expect(first.isError).toBeFalsy();
    expect(first.content).toEqual([{ type: 'text', text: 'charged #1' }]);
    const ref = refOf(first);
    expect((await store.get(ref))?.state).toBe('dispatched');
    blink.down = false;
    await vi.waitFor(async () => expect((await store.get(ref))?.state).toBe('completed'), PATIENTLY);
    expect((await store.get(ref))?.deliveredAt).not.toBeNull();
    const outcome = (await store.journalFor(ref)).filter((e) => e.kind === 'outcome');
    expect(outcome).toHaveLength(1);
    expect(outcome[0]?.detail).toMatchObject({ state: 'completed', late: true });
    await here.drain();
    expect(target.invocations).toBe(1);
  });

  it('lands even on `unknown` (its lease lapsed, a sweep ran): another process then replays it, dispatching nothing', async () => {
    const { clock, store, blink, here, there, target } = fleet();
    const ref = refOf(await here.execute(call(review, order), target.dispatch));
    clock.advance(5_000);
    expect((await store.sweep({ retentionMs: 3_600_000 })).expired.map((r) => r.id)).toEqual([ref]);
    // Before the held outcome lands, another process can only say what it knows.
    expect(idemCodeOf(await there.execute(call(review, order), target.dispatch))).toBe(
      'IDEM_REVIEW_REQUIRED',
    );
    blink.down = false;
    await vi.waitFor(async () => expect((await store.get(ref))?.state).toBe('completed'), PATIENTLY);
    const again = await there.execute(call(review, order), target.dispatch);
    expect(again._meta?.[META.replayed]).toBe(true);
    expect(refOf(again)).toBe(ref);
    expect(target.invocations).toBe(1);
  });

  it('is written at once for a retry in this process, which hears the outcome, not `unknown`', async () => {
    const { clock, store, blink, here, target } = fleet();
    const ref = refOf(await here.execute(call(review, order), target.dispatch));
    clock.advance(5_000);
    blink.down = false;
    const retry = await here.execute(call(review, order), target.dispatch);
    expect(idemCodeOf(retry)).toBeUndefined();
    expect(refOf(retry)).toBe(ref);
    expect((await store.get(ref))?.state).toBe('completed');
    expect(target.invocations).toBe(1);
  });

  it('is never written over an operator who resolved the execution meanwhile', async () => {
    const { clock, store, blink, here, there, target } = fleet();
    const ref = refOf(await here.execute(call(review, order), target.dispatch));
    clock.advance(5_000);
    await store.sweep({ retentionMs: 3_600_000 });
    expect(await there.resolve(ref, 'failed', 'operator:bob', 'the card was never charged')).toBeDefined();
    blink.down = false;
    // The held write is tried and does not land: nothing is left held.
    await vi.waitFor(() => expect(here.inFlight).toBe(0), PATIENTLY);
    expect((await store.get(ref))?.state).toBe('failed');
    expect((await store.journalFor(ref)).filter((e) => e.kind === 'outcome')).toEqual([]);
    expect(target.invocations).toBe(1);
  });
});

describe('drain', () => {
  it('waits for a held outcome; new calls meanwhile are not executed', async () => {
    const { store, blink, here, target } = fleet();
    const ref = refOf(await here.execute(call(review, order), target.dispatch));
    let drained = false;
    const draining = here.drain().then(() => {
      drained = true;
    });
    const refused = await here.execute(call(review, { order_id: 'o-2' }, ALICE), target.dispatch);
    expect(idemCodeOf(refused)).toBe('IDEM_NOT_EXECUTED');
    expect(drained).toBe(false);
    blink.down = false;
    await draining;
    expect((await store.get(ref))?.state).toBe('completed');
    expect(target.invocations).toBe(1);
  });
});
