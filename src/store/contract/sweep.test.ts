import { beforeEach, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { TRIM_JOURNALED_FIELD, TRIMMED_IDS_FIELD } from '../../journal/trims.js';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { LONG_MS, newId, PAST_SHORT_LEASE_MS, SHORT_LEASE_MS } from './fixtures.contract.js';

describeEveryStore('sweep', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon, executionIn, elapse } = t;

  it('a dry run reports what it would do and changes nothing', async () => {
    const { input } = await claimWon({
      state: 'dispatched',
      dispatchTimeoutMs: LONG_MS,
      leaseMs: SHORT_LEASE_MS,
    });
    await elapse(PAST_SHORT_LEASE_MS);
    const preview = await store.sweep({ retentionMs: LONG_MS, dryRun: true });
    expect(preview.expired.map((r) => [r.id, r.state])).toEqual([[input.id, 'unknown']]);
    expect((await store.get(input.id))?.state).toBe('dispatched');
    expect(await store.readJournal()).toEqual([]);
    const real = await store.sweep({ retentionMs: LONG_MS });
    expect(real.expired.map((r) => r.id)).toEqual([input.id]);
  });

  it('turns a dispatched execution whose lease expired into unknown, and journals it', async () => {
    const { input } = await claimWon({
      leaseMs: SHORT_LEASE_MS,
      actor: 'user:carol',
      tool: 'deploy.run',
    });
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      token: input.claimToken,
      dispatchTimeoutMs: LONG_MS,
    });
    await elapse(PAST_SHORT_LEASE_MS);
    const result = await store.sweep({ retentionMs: LONG_MS });

    expect(result.trimmed).toBe(0);
    expect(result.expired.map((r) => [r.id, r.state])).toEqual([[input.id, 'unknown']]);
    const record = await store.get(input.id);
    expect(record?.state).toBe('unknown');
    expect(record!.updatedAt).toBeGreaterThanOrEqual(record!.dispatchedAt! + SHORT_LEASE_MS);
    const journal = await store.readJournal();
    expect(journal).toHaveLength(1);
    expect(journal[0]).toMatchObject({
      kind: 'lease_expired',
      executionId: input.id,
      actor: 'user:carol',
      tool: 'deploy.run',
    });
    expect(chainProblems(journal)).toEqual([]);

    const again = await store.sweep({ retentionMs: LONG_MS });
    expect(again.expired).toEqual([]);
    expect(await store.readJournal()).toHaveLength(1);
  });

  it('turns a dispatched execution past its deadline into unknown, even with a live lease', async () => {
    const { input } = await claimWon();
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      token: input.claimToken,
      dispatchTimeoutMs: SHORT_LEASE_MS,
    });
    await elapse(PAST_SHORT_LEASE_MS);
    const result = await store.sweep({ retentionMs: LONG_MS });
    expect(result.expired.map((r) => r.id)).toEqual([input.id]);
    expect((await store.get(input.id))?.state).toBe('unknown');
  });

  it('leaves live dispatches and undispatched executions with expired leases alone', async () => {
    const live = await executionIn('dispatched');
    const idle = [
      await executionIn('accepted', { leaseMs: SHORT_LEASE_MS }),
      await executionIn('awaiting_approval', { leaseMs: SHORT_LEASE_MS }),
      await executionIn('authorized', { leaseMs: SHORT_LEASE_MS }),
    ];
    await elapse(PAST_SHORT_LEASE_MS);
    const result = await store.sweep({ retentionMs: LONG_MS });
    expect(result).toEqual({ expired: [], trimmed: 0 });
    expect((await store.get(live.input.id))?.state).toBe('dispatched');
    for (const { input, record } of idle) expect((await store.get(input.id))?.state).toBe(record.state);
    expect(await store.readJournal()).toEqual([]);
  });

  it('deletes finished executions once their retention has passed, and frees their fingerprint', async () => {
    const old = [await executionIn('completed'), await executionIn('failed'), await executionIn('denied')];
    await elapse(250);
    const recent = await executionIn('completed');
    const result = await store.sweep({ retentionMs: 200 });

    expect(result.trimmed).toBe(3);
    for (const { input } of old) {
      expect(await store.get(input.id)).toBeUndefined();
      expect(await store.findActive(input.fingerprint)).toBeUndefined();
    }
    expect((await store.get(recent.input.id))?.state).toBe('completed');
    expect((await store.claim(claimInput({ fingerprint: old[0]!.input.fingerprint }))).won).toBe(true);
  });

  it('never deletes accepted, awaiting_approval, authorized, live dispatched or unknown, however old', async () => {
    const kept = [
      await executionIn('accepted'),
      await executionIn('awaiting_approval'),
      await executionIn('authorized'),
      await executionIn('dispatched'),
      await executionIn('unknown'),
    ];
    const finished = await executionIn('completed');
    await elapse(20);
    const result = await store.sweep({ retentionMs: 0 });

    expect(result.trimmed).toBe(1);
    expect(await store.get(finished.input.id)).toBeUndefined();
    for (const { input, record } of kept) {
      expect((await store.get(input.id))?.state).toBe(record.state);
      expect((await store.findActive(input.fingerprint))?.id).toBe(input.id);
    }
  });

  it('keeps the journal of what it trims, and journals the trim: one `trimmed` event naming the executions, in id order', async () => {
    const claimAccepted = (id = newId()) => claimWon({ id }, [{ kind: 'accepted', executionId: id }]);
    const first = await claimAccepted();
    const second = await claimAccepted();
    // Claimed with the mark that tells verify this execution's trim will be journaled.
    const accepted = await store.readJournal();
    expect(accepted.map((e) => e.detail)).toEqual([
      { [TRIM_JOURNALED_FIELD]: true },
      { [TRIM_JOURNALED_FIELD]: true },
    ]);
    const kept = await executionIn('accepted');
    for (const { input } of [second, first]) {
      await store.transition({ id: input.id, from: ['accepted'], to: 'denied' });
    }
    await elapse(5);
    expect((await store.sweep({ retentionMs: 0, dryRun: true })).trimmed).toBe(2);
    expect(await store.readJournal()).toHaveLength(2);

    expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(2);
    const journal = await store.readJournal();
    expect(journal).toHaveLength(3);
    expect(journal[2]).toMatchObject({
      kind: 'trimmed',
      executionId: null,
      detail: { [TRIMMED_IDS_FIELD]: [first.input.id, second.input.id], retentionMs: 0 },
    });
    expect(chainProblems(journal)).toEqual([]);
    expect((await store.get(kept.input.id))?.state).toBe('accepted');
    // A sweep that trims nothing journals nothing.
    await store.sweep({ retentionMs: 0 });
    expect(await store.readJournal()).toHaveLength(3);
  });

  it("a trimmed execution's timeline is still read (`idem executions show`), and no other's with it", async () => {
    const id = newId();
    const { input } = await claimWon({ id }, [{ kind: 'accepted', executionId: id }]);
    await store.appendEvents([{ kind: 'attached', executionId: id, requestRef: 'r2' }]);
    await store.transition({
      id,
      from: ['accepted'],
      to: 'denied',
      events: [{ kind: 'denied', executionId: id }],
    });
    const other = await claimWon({}, [{ kind: 'accepted', executionId: 'exe_other' }]);
    const before = await store.journalFor(id);
    expect(before.map((e) => e.kind)).toEqual(['accepted', 'attached', 'denied']);
    await elapse(5);
    expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(1);
    expect(await store.get(input.id)).toBeUndefined();
    expect(await store.journalFor(id)).toEqual(before);
    expect((await store.journalFor('exe_other')).map((e) => e.kind)).toEqual(['accepted']);
    expect(other.record.id).not.toBe(id);
  });
});
