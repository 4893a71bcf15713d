import { beforeEach, expect, it } from 'vitest';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { newId } from './fixtures.contract.js';

describeEveryStore('markDelivered', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { executionIn, elapse } = t;

  it('records delivery the first time only, with its events', async () => {
    const { input } = await executionIn('completed');
    const before = await store.now();
    await store.markDelivered(input.id, [{ kind: 'delivered', executionId: input.id, detail: { n: 1 } }]);
    const first = await store.get(input.id);
    expect(first!.deliveredAt).toBeGreaterThanOrEqual(before);
    expect(first!.deliveredAt).toBeLessThanOrEqual(first!.readAt);

    await elapse(5);
    await store.markDelivered(input.id, [{ kind: 'delivered', executionId: input.id, detail: { n: 2 } }]);
    expect((await store.get(input.id))?.deliveredAt).toBe(first!.deliveredAt);
    const journal = await store.readJournal();
    expect(journal.map((e) => e.detail)).toEqual([{ n: 1 }]);
  });

  it('is a quiet no-op for an unknown id', async () => {
    await expect(store.markDelivered(newId(), [{ kind: 'delivered' }])).resolves.toBeUndefined();
    expect(await store.readJournal()).toEqual([]);
  });

  it('leaves the outcome and state alone', async () => {
    const { input, record } = await executionIn('completed');
    await store.markDelivered(input.id);
    const after = await store.get(input.id);
    expect(after).toMatchObject({ state: 'completed', outcome: record.outcome });
  });
});
