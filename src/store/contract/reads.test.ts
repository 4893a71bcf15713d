import { beforeEach, expect, it } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import type { ClaimInput, ExecutionRecord, ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { AWKWARD_OUTCOME, LONG_MS, newId, newTaskId } from './fixtures.contract.js';

describeEveryStore('get, findActive, list and the clock', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon, executionIn, elapse } = t;

  it('get and findActive answer undefined for what does not exist', async () => {
    expect(await store.get(newId())).toBeUndefined();
    expect(await store.findActive(newFingerprint())).toBeUndefined();
  });

  it('findActive returns the holder whatever its state, until it is replaced', async () => {
    const { input } = await executionIn('completed');
    expect((await store.findActive(input.fingerprint))?.state).toBe('completed');
    const next = claimInput({ fingerprint: input.fingerprint });
    await store.claim(next, { replacing: input.id });
    expect((await store.findActive(input.fingerprint))?.id).toBe(next.id);
  });

  it('list filters by state, tool, actor, since and limit, newest first by id', async () => {
    const a = await executionIn('accepted', { tool: 'mail.send', actor: 'user:alice' });
    const b = await executionIn('completed', { tool: 'mail.send', actor: 'user:bob' });
    const c = await executionIn('awaiting_approval', { tool: 'payments.charge', actor: 'user:alice' });
    await elapse(20);
    const d = await executionIn('dispatched', { tool: 'payments.charge', actor: 'user:bob' });
    const e = await executionIn('unknown', { tool: 'mail.send', actor: 'user:alice' });
    const ids = (records: ExecutionRecord[]) => records.map((r) => r.id);
    const newestFirst = (...xs: { input: ClaimInput }[]) =>
      xs
        .map((x) => x.input.id)
        .sort()
        .reverse();

    expect(ids(await store.list())).toEqual(newestFirst(a, b, c, d, e));
    expect(ids(await store.list({ state: 'completed' }))).toEqual(newestFirst(b));
    expect(ids(await store.list({ state: ['accepted', 'unknown', 'awaiting_approval'] }))).toEqual(
      newestFirst(a, c, e),
    );
    expect(ids(await store.list({ state: [] }))).toEqual([]);
    expect(ids(await store.list({ tool: 'mail.send' }))).toEqual(newestFirst(a, b, e));
    expect(ids(await store.list({ actor: 'user:bob' }))).toEqual(newestFirst(b, d));
    expect(ids(await store.list({ since: d.record.createdAt }))).toEqual(newestFirst(d, e));
    expect(ids(await store.list({ since: d.record.createdAt + LONG_MS }))).toEqual([]);
    expect(ids(await store.list({ limit: 2 }))).toEqual(newestFirst(a, b, c, d, e).slice(0, 2));
    expect(
      ids(await store.list({ tool: 'mail.send', actor: 'user:alice', state: ['accepted', 'unknown'] })),
    ).toEqual(newestFirst(a, e));
    expect(
      ids(
        await store.list({
          tool: 'payments.charge',
          since: d.record.createdAt,
          state: 'dispatched',
          limit: 5,
        }),
      ),
    ).toEqual(newestFirst(d));
    expect(ids(await store.list({ tool: 'no.such.tool' }))).toEqual([]);
  });

  it('countStates counts each state asked, in order, with its oldest last change and the store clock', async () => {
    const empty = await store.countStates(['unknown', 'awaiting_approval']);
    expect(empty.counts).toEqual([
      { state: 'unknown', count: 0, oldestUpdatedAt: null },
      { state: 'awaiting_approval', count: 0, oldestUpdatedAt: null },
    ]);
    const first = await executionIn('unknown');
    await elapse(20);
    const second = await executionIn('unknown');
    const waiting = await executionIn('awaiting_approval');
    await executionIn('completed');
    const before = await store.now();
    const { counts, readAt } = await store.countStates(['awaiting_approval', 'unknown', 'dispatched']);
    expect(counts).toEqual([
      { state: 'awaiting_approval', count: 1, oldestUpdatedAt: waiting.record.updatedAt },
      { state: 'unknown', count: 2, oldestUpdatedAt: first.record.updatedAt },
      { state: 'dispatched', count: 0, oldestUpdatedAt: null },
    ]);
    expect(first.record.updatedAt).toBeLessThan(second.record.updatedAt);
    expect(readAt).toBeGreaterThanOrEqual(before);
    expect(readAt).toBeLessThanOrEqual(await store.now());
    // Resolved, it is counted no more: the oldest is the next one.
    await store.transition({ id: first.input.id, from: ['unknown'], to: 'failed', holder: null });
    expect((await store.countStates(['unknown'])).counts).toEqual([
      { state: 'unknown', count: 1, oldestUpdatedAt: second.record.updatedAt },
    ]);
    expect((await store.countStates([])).counts).toEqual([]);
  });

  it('list pages by `before`, narrows by session, and searches; countByState counts what it narrows to', async () => {
    const a = await executionIn('completed', {
      tool: 'mail.send',
      actor: 'user:alice',
      session: 'ses_A',
      argumentsPreview: '{"to":"ops@example.com"}',
    });
    const b = await executionIn('unknown', {
      tool: 'payments.charge',
      actor: 'user:bob',
      session: 'ses_B',
    });
    const c = await executionIn('awaiting_approval', {
      tool: 'payments.charge',
      actor: 'user:alice',
      session: 'ses_A',
      argumentsPreview: '{"order":"ORD-77","cents":1200}',
    });
    const d = await executionIn('completed', { tool: 'mail.send', actor: 'user:bob', session: null });
    await store.appendEvents([{ kind: 'attached', executionId: b.input.id, requestRef: 'req:http-9' }]);
    const taskId = newTaskId();
    await store.openTask(
      {
        taskId,
        executionId: d.input.id,
        actor: 'user:bob',
        generation: 'v2',
        ttlMs: null,
        pollIntervalMs: 500,
      },
      [],
    );
    const ids = (records: ExecutionRecord[]) => records.map((r) => r.id);
    const newestFirst = (...xs: { input: ClaimInput }[]) =>
      xs
        .map((x) => x.input.id)
        .sort()
        .reverse();
    const all = newestFirst(a, b, c, d);

    // Pages: newest first, each from below the last id of the one before.
    const first = ids(await store.list({ limit: 2 }));
    expect(first).toEqual(all.slice(0, 2));
    expect(ids(await store.list({ limit: 2, before: first[1] }))).toEqual(all.slice(2, 4));
    expect(ids(await store.list({ before: all[3] }))).toEqual([]);
    expect(ids(await store.list({ state: 'completed', before: all[0] }))).toEqual(
      newestFirst(a, d).filter((id) => id < (all[0] as string)),
    );
    expect(ids(await store.list({ session: 'ses_A' }))).toEqual(newestFirst(a, c));

    // Search: ref prefix, tool, actor, argument text, task id, request id; nothing else.
    const search = async (text: string) => ids(await store.list({ text }));
    expect(await search(c.input.id)).toEqual([c.input.id]);
    expect(await search(c.input.id.slice(0, -3))).toContain(c.input.id);
    expect(await search('payments.charge')).toEqual(newestFirst(b, c));
    expect(await search('user:alice')).toEqual(newestFirst(a, c));
    expect(await search('ORD-77')).toEqual([c.input.id]);
    expect(await search('ops@example')).toEqual([a.input.id]);
    expect(await search(taskId)).toEqual([d.input.id]);
    expect(await search('req:http-9')).toEqual([b.input.id]);
    expect(await search('no-such-thing')).toEqual([]);
    expect(await search('payments')).toEqual([]);
    expect(ids(await store.list({ text: 'payments.charge', state: 'unknown' }))).toEqual([b.input.id]);
    expect(ids(await store.list({ text: 'user:alice', limit: 1 }))).toEqual(newestFirst(a, c).slice(0, 1));

    const none = {
      accepted: 0,
      awaiting_approval: 0,
      authorized: 0,
      dispatched: 0,
      completed: 0,
      failed: 0,
      unknown: 0,
      denied: 0,
    };
    expect(await store.countByState()).toEqual({
      ...none,
      completed: 2,
      unknown: 1,
      awaiting_approval: 1,
    });
    expect(await store.countByState({ actor: 'user:alice' })).toEqual({
      ...none,
      completed: 1,
      awaiting_approval: 1,
    });
    expect(await store.countByState({ text: 'payments.charge' })).toEqual({
      ...none,
      unknown: 1,
      awaiting_approval: 1,
    });
    expect(await store.countByState({ session: 'ses_B', tool: 'payments.charge' })).toEqual({
      ...none,
      unknown: 1,
    });
    expect(await store.countByState({ since: d.record.createdAt + LONG_MS })).toEqual(none);
  });

  it('reads carry readAt, the store clock at the time of the read', async () => {
    const before = await store.now();
    const { input, record } = await claimWon();
    const moved = await store.transition({ id: input.id, from: ['accepted'], to: 'authorized' });
    const reads = [
      record,
      moved!,
      (await store.get(input.id))!,
      (await store.findActive(input.fingerprint))!,
      ...(await store.list()),
    ];
    const after = await store.now();
    for (const read of reads) {
      expect(typeof read.readAt).toBe('number');
      expect(read.readAt).toBeGreaterThanOrEqual(before);
      expect(read.readAt).toBeLessThanOrEqual(after);
    }
  });

  it('returns copies: changing a returned record or the given outcome changes nothing stored', async () => {
    const { input, record } = await claimWon();
    record.state = 'completed';
    record.actor = 'someone else';
    const outcome = structuredClone(AWKWARD_OUTCOME);
    const done = await store.transition({ id: input.id, from: ['accepted'], to: 'completed', outcome });
    (outcome.result.content[0] as { text: string }).text = 'changed after the write';
    done!.outcome!.result.isError = true;
    const got = await store.get(input.id);
    (got!.outcome!.result.structuredContent!.nested as unknown[]).push('more');
    const listed = await store.list();
    listed[0]!.note = 'scribbled';
    (await store.findActive(input.fingerprint))!.outcome!.result.content.length = 0;

    const fresh = await store.get(input.id);
    expect(fresh).toMatchObject({
      state: 'completed',
      actor: input.actor,
      note: null,
      outcome: AWKWARD_OUTCOME,
    });
  });

  it('now() moves forward with time', async () => {
    const a = await store.now();
    await elapse(30);
    const b = await store.now();
    expect(b - a).toBeGreaterThanOrEqual(25);
  });
});
