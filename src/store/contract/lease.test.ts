import { beforeEach, expect, it } from 'vitest';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { LONG_MS, newId, newToken, stable } from './fixtures.contract.js';

describeEveryStore('renewLease', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon, elapse } = t;

  it('extends the lease for the token holder', async () => {
    const { input, record } = await claimWon({ leaseMs: 1000 });
    await elapse(5);
    const before = await store.now();
    expect(await store.renewLease(input.id, input.claimToken, 50_000)).toBe(true);
    const after = await store.get(input.id);
    expect(after!.leaseExpiresAt).toBeGreaterThanOrEqual(before + 50_000);
    expect(after!.leaseExpiresAt).toBeLessThanOrEqual(after!.readAt + 50_000);
    expect(after!.leaseExpiresAt).toBeGreaterThan(record.leaseExpiresAt!);
  });

  it('refuses anyone else and unknown ids, changing nothing', async () => {
    const { input } = await claimWon();
    const before = await store.get(input.id);
    expect(await store.renewLease(input.id, newToken(), LONG_MS * 2)).toBe(false);
    expect(await store.renewLease(newId(), input.claimToken, LONG_MS)).toBe(false);
    expect(stable(await store.get(input.id))).toEqual(stable(before));
  });

  it('refuses once the holder was cleared', async () => {
    const { input } = await claimWon();
    await store.transition({ id: input.id, from: ['accepted'], to: 'accepted', holder: null });
    expect(await store.renewLease(input.id, input.claimToken, LONG_MS)).toBe(false);
    expect((await store.get(input.id))?.leaseExpiresAt).toBeNull();
  });
});
