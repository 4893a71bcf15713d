import { beforeEach, expect, it } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { stable } from './fixtures.contract.js';

describeEveryStore('claim', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon, executionIn, elapse } = t;

  it('the first claim of a fingerprint wins and records what it was given', async () => {
    const before = await store.now();
    const input = claimInput({ attachWindowMs: 30_000, leaseMs: 45_000 });
    const result = await store.claim(input);
    const after = await store.now();

    expect(result.won).toBe(true);
    const record = result.record!;
    expect(stable(record)).toEqual({
      id: input.id,
      fingerprint: input.fingerprint,
      // None given: a scope whose fingerprint is the whole request.
      requestDigest: null,
      actor: input.actor,
      tool: input.tool,
      session: input.session,
      replay: input.replay,
      state: 'accepted',
      createdAt: record.createdAt,
      updatedAt: record.createdAt,
      attachUntil: record.createdAt + 30_000,
      dispatchedAt: null,
      deadlineAt: null,
      leaseOwner: input.leaseOwner,
      leaseExpiresAt: record.createdAt + 45_000,
      outcome: null,
      deliveredAt: null,
      argumentsPreview: input.argumentsPreview,
      note: null,
      upstreamTask: null,
    });
    expect(record.createdAt).toBeGreaterThanOrEqual(before);
    expect(record.createdAt).toBeLessThanOrEqual(after);
    expect(stable(await store.get(input.id))).toEqual(stable(record));
  });

  it('keeps the request digest of a business-key claim, and hands it to a losing claim with the holder', async () => {
    const requestDigest = newFingerprint();
    const { input, record } = await claimWon({ requestDigest });
    expect(record.requestDigest).toBe(requestDigest);
    expect((await store.get(input.id))?.requestDigest).toBe(requestDigest);
    expect((await store.findActive(input.fingerprint))?.requestDigest).toBe(requestDigest);
    expect((await store.list()).find((r) => r.id === input.id)?.requestDigest).toBe(requestDigest);
    // A later use of the key with other arguments: it loses, and sees what the holder was claimed with.
    const other = await store.claim(
      claimInput({ fingerprint: input.fingerprint, requestDigest: newFingerprint() }),
    );
    expect(other.won).toBe(false);
    expect(other.record?.requestDigest).toBe(requestDigest);
    // It survives every state change.
    const done = await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'completed',
      holder: null,
    });
    expect(done?.requestDigest).toBe(requestDigest);
    // Any spelling is kept as given, not only the compact one.
    const odd = await claimWon({ requestDigest: 'rq:not-compact' });
    expect((await store.get(odd.input.id))?.requestDigest).toBe('rq:not-compact');
    const none = await claimWon({ requestDigest: null });
    expect(none.record.requestDigest).toBeNull();
  });

  it('never hands out the claim token', async () => {
    const { input, record } = await claimWon();
    const copies = [record, await store.get(input.id), await store.findActive(input.fingerprint)];
    copies.push(...(await store.list()));
    for (const copy of copies) {
      expect(copy).not.toHaveProperty('claimToken');
      expect(JSON.stringify(copy)).not.toContain(input.claimToken);
    }
  });

  it('keeps a null session, the awaiting_approval start state and unicode text as given', async () => {
    const { input, record } = await claimWon({
      session: null,
      state: 'awaiting_approval',
      replay: 'review',
      actor: 'user:zoë@例え.jp',
      argumentsPreview: '{"note":"naïve 🚀 \\u0000"}',
    });
    expect(record).toMatchObject({
      session: null,
      state: 'awaiting_approval',
      replay: 'review',
      actor: input.actor,
      argumentsPreview: input.argumentsPreview,
    });
    expect(stable(await store.get(input.id))).toEqual(stable(record));
  });

  it("a second claim of the same fingerprint loses and gets the holder's record", async () => {
    const { input: first, record: holder } = await claimWon();
    const second = claimInput({ fingerprint: first.fingerprint, actor: first.actor });
    const result = await store.claim(second, { events: [{ kind: 'accepted', executionId: second.id }] });

    expect(result.won).toBe(false);
    expect(stable(result.record)).toEqual(stable(holder));
    expect(await store.get(second.id)).toBeUndefined();
    expect(await store.readJournal()).toEqual([]);
  });

  it('of 200 concurrent claims of one fingerprint exactly one wins, and every loser sees the winner', async () => {
    const fingerprint = newFingerprint();
    const inputs = Array.from({ length: 200 }, () => claimInput({ fingerprint }));
    const results = await Promise.all(
      inputs.map((input) => store.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] })),
    );

    const winners = results.filter((r) => r.won);
    expect(winners).toHaveLength(1);
    const winnerId = winners[0]!.record!.id;
    for (const result of results.filter((r) => !r.won)) expect(result.record?.id).toBe(winnerId);
    expect((await store.findActive(fingerprint))?.id).toBe(winnerId);
    expect((await store.list({ limit: 1000 })).map((r) => r.id)).toEqual([winnerId]);
    const journal = await store.readJournal();
    expect(journal.map((e) => e.executionId)).toEqual([winnerId]);
  });

  it('claims of different fingerprints do not interfere', async () => {
    const inputs = Array.from({ length: 50 }, () => claimInput());
    const results = await Promise.all(inputs.map((input) => store.claim(input)));
    expect(results.every((r) => r.won)).toBe(true);
    for (const input of inputs) expect((await store.findActive(input.fingerprint))?.id).toBe(input.id);
  });

  it('`replacing` retires the old holder and the new claim wins', async () => {
    const { input: old } = await claimWon({ attachWindowMs: 0 });
    const next = claimInput({ fingerprint: old.fingerprint });
    const result = await store.claim(next, { replacing: old.id });

    expect(result.won).toBe(true);
    expect(result.record?.id).toBe(next.id);
    expect((await store.findActive(old.fingerprint))?.id).toBe(next.id);
    // Retired, not deleted: its history stays readable.
    expect((await store.get(old.id))?.state).toBe('accepted');
    expect((await store.list()).map((r) => r.id).sort()).toEqual([old.id, next.id].sort());
    // A plain claim now attaches to the new holder.
    const third = await store.claim(claimInput({ fingerprint: old.fingerprint }));
    expect(third.won).toBe(false);
    expect(third.record?.id).toBe(next.id);
  });

  it('`replacing` an execution that no longer holds the fingerprint retires nothing', async () => {
    const { input: old } = await claimWon();
    const current = await store.claim(claimInput({ fingerprint: old.fingerprint }), {
      replacing: old.id,
    });
    expect(current.won).toBe(true);
    const late = await store.claim(claimInput({ fingerprint: old.fingerprint }), { replacing: old.id });

    expect(late.won).toBe(false);
    expect(late.record?.id).toBe(current.record?.id);
    expect((await store.findActive(old.fingerprint))?.id).toBe(current.record?.id);
  });

  it('`replacing` only retires the holder of the claimed fingerprint', async () => {
    const { input: other } = await claimWon();
    const fresh = claimInput();
    expect((await store.claim(fresh, { replacing: other.id })).won).toBe(true);
    expect((await store.findActive(other.fingerprint))?.id).toBe(other.id);
    expect((await store.findActive(fresh.fingerprint))?.id).toBe(fresh.id);
  });

  it('`replacing` an execution that was trimmed away just claims', async () => {
    const { input: old } = await executionIn('completed');
    await elapse(5);
    expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(1);
    const result = await store.claim(claimInput({ fingerprint: old.fingerprint }), { replacing: old.id });
    expect(result.won).toBe(true);
  });

  it('two concurrent replacers of the same old record produce exactly one new winner', async () => {
    const { input: old } = await claimWon();
    const [a, b] = [
      claimInput({ fingerprint: old.fingerprint }),
      claimInput({ fingerprint: old.fingerprint }),
    ];
    const results = await Promise.all([
      store.claim(a, { replacing: old.id }),
      store.claim(b, { replacing: old.id }),
    ]);

    expect(results.filter((r) => r.won)).toHaveLength(1);
    const winner = results.find((r) => r.won)!.record!;
    expect([a.id, b.id]).toContain(winner.id);
    expect(results.find((r) => !r.won)?.record?.id).toBe(winner.id);
    expect((await store.findActive(old.fingerprint))?.id).toBe(winner.id);
  });

  it('of 100 concurrent replacers exactly one wins and only its events are journaled', async () => {
    const { input: old } = await claimWon();
    const inputs = Array.from({ length: 100 }, () => claimInput({ fingerprint: old.fingerprint }));
    const results = await Promise.all(
      inputs.map((input) =>
        store.claim(input, { replacing: old.id, events: [{ kind: 'accepted', executionId: input.id }] }),
      ),
    );

    const winners = results.filter((r) => r.won);
    expect(winners).toHaveLength(1);
    const winnerId = winners[0]!.record!.id;
    for (const result of results) expect(result.record?.id).toBe(winnerId);
    expect((await store.readJournal()).map((e) => e.executionId)).toEqual([winnerId]);
  });
});
