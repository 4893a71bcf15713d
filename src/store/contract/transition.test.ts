import { beforeEach, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import {
  AWKWARD_OUTCOME,
  LONG_MS,
  newId,
  newToken,
  PAST_SHORT_LEASE_MS,
  SHORT_LEASE_MS,
  stable,
} from './fixtures.contract.js';

describeEveryStore('transition', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon, executionIn, elapse } = t;

  it('applies when the current state is one of `from`, and stamps updatedAt', async () => {
    const { input, record } = await claimWon();
    await elapse(5);
    const moved = await store.transition({
      id: input.id,
      from: ['awaiting_approval', 'accepted'],
      to: 'authorized',
    });

    expect(moved?.state).toBe('authorized');
    expect(moved!.updatedAt).toBeGreaterThan(record.updatedAt);
    expect(moved!.createdAt).toBe(record.createdAt);
    expect(stable(await store.get(input.id))).toEqual(stable(moved));
  });

  it('is refused, changing nothing, when the state is not in `from`', async () => {
    const { input } = await claimWon();
    const before = await store.get(input.id);
    const refused = await store.transition({
      id: input.id,
      from: ['authorized', 'dispatched'],
      to: 'completed',
      outcome: AWKWARD_OUTCOME,
      note: 'should not stick',
      holder: null,
    });
    expect(refused).toBeUndefined();
    expect(stable(await store.get(input.id))).toEqual(stable(before));
  });

  it('is refused for an unknown id', async () => {
    expect(await store.transition({ id: newId(), from: ['accepted'], to: 'authorized' })).toBeUndefined();
  });

  it('with `token` applies only for the holder of the claim', async () => {
    const { input } = await claimWon();
    const before = await store.get(input.id);
    const wrong = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      token: newToken(),
      dispatchTimeoutMs: 1000,
    });
    expect(wrong).toBeUndefined();
    expect(stable(await store.get(input.id))).toEqual(stable(before));

    const right = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'authorized',
      token: input.claimToken,
    });
    expect(right?.state).toBe('authorized');
    // Omitting the token is how operators and the sweeper act.
    const operator = await store.transition({
      id: input.id,
      from: ['authorized'],
      to: 'denied',
      note: 'by ops',
    });
    expect(operator?.state).toBe('denied');
  });

  it('`holder` replaces the token and lease; the old token stops working', async () => {
    const { input } = await claimWon();
    const token = newToken();
    const taken = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'accepted',
      holder: { token, owner: 'gw-b:7', leaseMs: 20_000 },
    });
    expect(taken).toMatchObject({ leaseOwner: 'gw-b:7', leaseExpiresAt: taken!.updatedAt + 20_000 });

    const stale = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'authorized',
      token: input.claimToken,
    });
    expect(stale).toBeUndefined();
    expect(await store.renewLease(input.id, input.claimToken, 1000)).toBe(false);
    const fresh = await store.transition({ id: input.id, from: ['accepted'], to: 'authorized', token });
    expect(fresh?.state).toBe('authorized');
  });

  it('`holder: null` clears token and lease; omitting `holder` leaves them', async () => {
    const { input, record } = await claimWon();
    const kept = await store.transition({ id: input.id, from: ['accepted'], to: 'authorized' });
    expect(kept).toMatchObject({ leaseOwner: record.leaseOwner, leaseExpiresAt: record.leaseExpiresAt });
    expect(await store.renewLease(input.id, input.claimToken, LONG_MS)).toBe(true);

    const cleared = await store.transition({
      id: input.id,
      from: ['authorized'],
      to: 'authorized',
      holder: null,
    });
    expect(cleared).toMatchObject({ leaseOwner: null, leaseExpiresAt: null });
    expect(
      await store.transition({
        id: input.id,
        from: ['authorized'],
        to: 'dispatched',
        token: input.claimToken,
      }),
    ).toBeUndefined();
  });

  it('`dispatchTimeoutMs` marks the dispatch: dispatchedAt = now, deadlineAt = now + timeout', async () => {
    const { input } = await claimWon();
    const before = await store.now();
    const dispatched = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      token: input.claimToken,
      dispatchTimeoutMs: 12_345,
    });
    const after = await store.now();
    expect(dispatched!.dispatchedAt).toBe(dispatched!.updatedAt);
    expect(dispatched!.dispatchedAt).toBeGreaterThanOrEqual(before);
    expect(dispatched!.dispatchedAt).toBeLessThanOrEqual(after);
    expect(dispatched!.deadlineAt).toBe(dispatched!.dispatchedAt! + 12_345);

    await elapse(5);
    const done = await store.transition({ id: input.id, from: ['dispatched'], to: 'completed' });
    expect(done).toMatchObject({
      dispatchedAt: dispatched!.dispatchedAt,
      deadlineAt: dispatched!.deadlineAt,
    });
  });

  it('a claim straight into `dispatched` marks the dispatch in the same step', async () => {
    const before = await store.now();
    const { record } = await claimWon({ state: 'dispatched', dispatchTimeoutMs: 9_000 });
    expect(record.state).toBe('dispatched');
    expect(record.dispatchedAt).toBe(record.createdAt);
    expect(record.dispatchedAt).toBeGreaterThanOrEqual(before);
    expect(record.deadlineAt).toBe(record.createdAt + 9_000);
    const accepted = await claimWon();
    expect(accepted.record).toMatchObject({ dispatchedAt: null, deadlineAt: null });
  });

  it('`delivered` records delivery with the outcome, once', async () => {
    const { input, record } = await claimWon({ state: 'dispatched', dispatchTimeoutMs: LONG_MS });
    const done = await store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'completed',
      token: input.claimToken,
      outcome: AWKWARD_OUTCOME,
      delivered: true,
    });
    expect(done!.deliveredAt).toBe(done!.updatedAt);
    await elapse(5);
    await store.markDelivered(record.id);
    expect((await store.get(record.id))!.deliveredAt).toBe(done!.deliveredAt);
    const other = await claimWon({ state: 'dispatched', dispatchTimeoutMs: LONG_MS });
    const undelivered = await store.transition({
      id: other.record.id,
      from: ['dispatched'],
      to: 'unknown',
    });
    expect(undelivered!.deliveredAt).toBeNull();
  });

  it('stores the outcome exactly, and a later transition without one keeps it', async () => {
    const { input } = await claimWon();
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      dispatchTimeoutMs: LONG_MS,
    });
    const done = await store.transition({
      id: input.id,
      from: ['dispatched'],
      to: 'completed',
      outcome: AWKWARD_OUTCOME,
    });
    expect(done?.outcome).toEqual(AWKWARD_OUTCOME);
    expect((await store.get(input.id))?.outcome).toEqual(AWKWARD_OUTCOME);

    const noted = await store.transition({
      id: input.id,
      from: ['completed'],
      to: 'completed',
      note: 'checked',
    });
    expect(noted?.outcome).toEqual(AWKWARD_OUTCOME);
    expect((await store.list())[0]?.outcome).toEqual(AWKWARD_OUTCOME);
  });

  it('sets `note`, and a later transition without one keeps it', async () => {
    const { input } = await claimWon({ state: 'awaiting_approval' });
    const denied = await store.transition({
      id: input.id,
      from: ['awaiting_approval'],
      to: 'denied',
      note: 'Refusé par l’opérateur — budget 🚫',
    });
    expect(denied?.note).toBe('Refusé par l’opérateur — budget 🚫');
    const again = await store.transition({ id: input.id, from: ['denied'], to: 'denied' });
    expect(again?.note).toBe('Refusé par l’opérateur — budget 🚫');
  });

  it('`requireStale` is refused while the lease is alive', async () => {
    const { input } = await executionIn('dispatched');
    const before = await store.get(input.id);
    const refused = await store.transition({
      id: input.id,
      from: ['dispatched'],
      to: 'unknown',
      requireStale: true,
      events: [{ kind: 'lease_expired', executionId: input.id }],
    });
    expect(refused).toBeUndefined();
    expect(stable(await store.get(input.id))).toEqual(stable(before));
    expect(await store.readJournal()).toEqual([]);
  });

  it('`requireStale` applies once the lease has expired', async () => {
    const { input } = await claimWon({ leaseMs: SHORT_LEASE_MS });
    await elapse(PAST_SHORT_LEASE_MS);
    const token = newToken();
    const taken = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'accepted',
      requireStale: true,
      holder: { token, owner: 'gw-b:9', leaseMs: LONG_MS },
    });
    expect(taken?.leaseOwner).toBe('gw-b:9');
    // The new lease is alive, so a second recoverer is refused.
    expect(
      await store.transition({ id: input.id, from: ['accepted'], to: 'accepted', requireStale: true }),
    ).toBeUndefined();
  });

  it('`requireStale` applies when there is no lease at all', async () => {
    const { input } = await claimWon();
    await store.transition({ id: input.id, from: ['accepted'], to: 'authorized', holder: null });
    const taken = await store.transition({
      id: input.id,
      from: ['authorized'],
      to: 'authorized',
      requireStale: true,
    });
    expect(taken?.state).toBe('authorized');
  });

  it('`requireStale` applies once the dispatch deadline has passed, even with a live lease', async () => {
    const { input } = await claimWon();
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      token: input.claimToken,
      dispatchTimeoutMs: SHORT_LEASE_MS,
    });
    expect(await store.renewLease(input.id, input.claimToken, LONG_MS)).toBe(true);
    await elapse(PAST_SHORT_LEASE_MS);
    const resolved = await store.transition({
      id: input.id,
      from: ['dispatched'],
      to: 'unknown',
      requireStale: true,
    });
    expect(resolved?.state).toBe('unknown');
  });

  it('of 50 concurrent identical compare-and-sets exactly one applies', async () => {
    const { input } = await claimWon();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.transition({
          id: input.id,
          from: ['accepted'],
          to: 'dispatched',
          token: input.claimToken,
          dispatchTimeoutMs: LONG_MS,
          events: [{ kind: 'dispatched', executionId: input.id, detail: { attempt: i } }],
        }),
      ),
    );
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    expect(await store.readJournal()).toHaveLength(1);
  });

  it('`release` retires an execution from matching: the fingerprint can be claimed again', async () => {
    const first = await claimWon({ state: 'dispatched', dispatchTimeoutMs: LONG_MS });
    const released = await store.transition({
      id: first.record.id,
      from: ['dispatched'],
      to: 'failed',
      token: first.input.claimToken,
      release: true,
    });
    expect(released?.state).toBe('failed');
    expect(await store.findActive(first.input.fingerprint)).toBeUndefined();
    expect((await store.get(first.record.id))?.state).toBe('failed');
    const second = await store.claim({ ...claimInput(), fingerprint: first.input.fingerprint });
    expect(second.won).toBe(true);
  });
});
