import { beforeEach, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import type { ActivityEntry, ActivityEventInput } from '../../journal/events.js';
import { OUTCOME_DIGEST_FIELD, outcomeDigest, storedOutcomeDigest } from '../../journal/outcome-digest.js';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { AWKWARD_OUTCOME, LONG_MS, newId, newToken } from './fixtures.contract.js';

describeEveryStore('journal', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon } = t;

  it("an outcome's event carries the digest of the outcome as stored (what audit verify checks)", async () => {
    const input = claimInput();
    await store.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'completed',
      token: input.claimToken,
      outcome: AWKWARD_OUTCOME,
      events: [
        { kind: 'outcome', executionId: input.id, detail: { state: 'completed' } },
        { kind: 'delivered', executionId: input.id },
      ],
    });
    const [, outcome, delivered] = await store.journalFor(input.id);
    const stored = (await store.get(input.id))?.outcome;
    expect(outcome?.detail).toEqual({
      state: 'completed',
      [OUTCOME_DIGEST_FIELD]: outcomeDigest(stored),
    });
    expect(outcome?.detail[OUTCOME_DIGEST_FIELD]).toBe(storedOutcomeDigest(JSON.stringify(stored)));
    expect(delivered?.detail).toEqual({});
  });

  it('appends the events of every write in order, seq 1..n, hash-chained', async () => {
    const input = claimInput();
    await store.claim(input, {
      events: [
        { kind: 'received', requestRef: 'req:1', actor: 'user:alice', tool: 'payments.charge' },
        { kind: 'accepted', executionId: input.id },
      ],
    });
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'dispatched',
      token: input.claimToken,
      dispatchTimeoutMs: LONG_MS,
      events: [{ kind: 'dispatched', executionId: input.id, detail: { channel: 'mcp', attempt: 1 } }],
    });
    await store.transition({
      id: input.id,
      from: ['dispatched'],
      to: 'completed',
      token: input.claimToken,
      outcome: AWKWARD_OUTCOME,
      events: [{ kind: 'outcome', executionId: input.id, detail: { state: 'completed' } }],
    });
    await store.markDelivered(input.id, [{ kind: 'delivered', executionId: input.id }]);
    await store.appendEvents([
      {
        kind: 'id_reused',
        requestRef: 'req:1',
        detail: { note: 'même id — 再利用', nested: { list: [1, 'two', null] } },
      },
      { kind: 'receipt_hit', requestRef: 'req:2' },
    ]);
    const after = await store.now();

    const journal = await store.readJournal();
    expect(journal.map((e) => e.kind)).toEqual([
      'received',
      'accepted',
      'dispatched',
      'outcome',
      'delivered',
      'id_reused',
      'receipt_hit',
    ]);
    expect(chainProblems(journal)).toEqual([]);
    expect(journal[0]).toMatchObject({
      executionId: null,
      actor: 'user:alice',
      tool: 'payments.charge',
      requestRef: 'req:1',
      detail: {},
    });
    expect(journal[2]).toMatchObject({
      executionId: input.id,
      actor: null,
      detail: { channel: 'mcp', attempt: 1 },
    });
    expect(journal[5]!.detail).toEqual({ note: 'même id — 再利用', nested: { list: [1, 'two', null] } });
    for (let i = 1; i < journal.length; i++)
      expect(journal[i]!.at).toBeGreaterThanOrEqual(journal[i - 1]!.at);
    expect(journal.at(-1)!.at).toBeLessThanOrEqual(after);
  });

  it('appends nothing for refused writes or an empty list of events', async () => {
    const { input } = await claimWon();
    const events: ActivityEventInput[] = [{ kind: 'authorized', executionId: input.id }];
    await store.transition({ id: input.id, from: ['dispatched'], to: 'completed', events });
    await store.transition({
      id: input.id,
      from: ['accepted'],
      to: 'authorized',
      token: newToken(),
      events,
    });
    await store.transition({ id: newId(), from: ['accepted'], to: 'authorized', events });
    await store.claim(claimInput({ fingerprint: input.fingerprint }), { events });
    await store.appendEvents([]);
    expect(await store.readJournal()).toEqual([]);

    await store.transition({ id: input.id, from: ['accepted'], to: 'authorized', events });
    expect((await store.readJournal()).map((e) => e.kind)).toEqual(['authorized']);
  });

  it('readJournal pages by afterSeq and limit', async () => {
    await store.appendEvents(
      Array.from({ length: 25 }, (_, i) => ({ kind: 'received' as const, requestRef: `req:${i + 1}` })),
    );
    const all = await store.readJournal();
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(chainProblems(all)).toEqual([]);

    const pages: ActivityEntry[][] = [];
    for (let after = 0; ; ) {
      const page = await store.readJournal(after, 10);
      if (page.length === 0) break;
      pages.push(page);
      after = page.at(-1)!.seq;
    }
    expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(pages.flat()).toEqual(all);
    expect((await store.readJournal(24)).map((e) => e.requestRef)).toEqual(['req:25']);
    expect(await store.readJournal(25)).toEqual([]);
  });

  it('returns copies of journal entries', async () => {
    await store.appendEvents([{ kind: 'received', detail: { list: [1, 2] } }]);
    const [entry] = await store.readJournal();
    (entry!.detail.list as number[]).push(3);
    entry!.hash = 'f'.repeat(64);
    const [again] = await store.readJournal();
    expect(again!.detail).toEqual({ list: [1, 2] });
    expect(chainProblems([again!])).toEqual([]);
  });

  it('stays one chain under concurrent writers', async () => {
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const { input } = await claimWon({}, [{ kind: 'accepted', detail: { i } }]);
        await store.appendEvents([{ kind: 'received', executionId: input.id }]);
      }),
    );
    const journal = await store.readJournal();
    expect(journal).toHaveLength(80);
    expect(chainProblems(journal)).toEqual([]);
  });

  it('the sessions stream is a chain of its own, apart from activity', async () => {
    await store.appendEvents(
      [
        {
          kind: 'session_start',
          actor: 'user:alice',
          requestRef: 'ses_1',
          detail: { client: { name: 'agent', version: '1' }, protocol_version: '2025-11-25' },
        },
      ],
      'sessions',
    );
    await store.appendEvents([{ kind: 'received', executionId: 'exe_x' }]);
    await store.appendEvents([{ kind: 'session_end', actor: 'user:alice', requestRef: 'ses_1' }], 'sessions');
    const sessions = await store.readJournal(0, 100, 'sessions');
    expect(sessions.map((e) => e.kind)).toEqual(['session_start', 'session_end']);
    // Rising from 1; PostgreSQL's may skip (each row takes a block of seqs, docs/adr/0053).
    expect(sessions[0]?.seq).toBe(1);
    expect(sessions[1]!.seq).toBeGreaterThan(1);
    expect(sessions[0]?.detail).toEqual({
      client: { name: 'agent', version: '1' },
      protocol_version: '2025-11-25',
    });
    expect(chainProblems(sessions, 'sessions')).toEqual([]);
    const activity = await store.readJournal();
    expect(activity.map((e) => e.kind)).toEqual(['received']);
    expect(chainProblems(activity)).toEqual([]);
  });

  it('journalHead is the last entry of each stream', async () => {
    expect(await store.journalHead()).toBeUndefined();
    await store.appendEvents([{ kind: 'received' }, { kind: 'attached' }]);
    await store.appendEvents([{ kind: 'session_start' }], 'sessions');
    const activity = await store.readJournal();
    expect(await store.journalHead()).toEqual({ seq: 2, hash: activity[1]?.hash });
    const sessions = await store.readJournal(0, 10, 'sessions');
    expect(await store.journalHead('sessions')).toEqual({ seq: 1, hash: sessions[0]?.hash });
  });

  it("journalFor gives one execution's entries, in order, and no other's", async () => {
    const a = await claimWon({}, [{ kind: 'received', executionId: 'exe_a' }]);
    await store.appendEvents([{ kind: 'attached', executionId: 'exe_b' }]);
    await store.transition({
      id: a.record.id,
      from: ['accepted'],
      to: 'dispatched',
      token: a.input.claimToken,
      events: [
        { kind: 'dispatched', executionId: 'exe_a' },
        { kind: 'attached', executionId: 'exe_a', requestRef: 'r2' },
      ],
    });
    const timeline = await store.journalFor('exe_a');
    expect(timeline.map((e) => e.kind)).toEqual(['received', 'dispatched', 'attached']);
    // The same entries, seqs included, as the whole journal gives them (seqs may skip on PostgreSQL).
    expect(timeline).toEqual((await store.readJournal()).filter((e) => e.executionId === 'exe_a'));
    expect(timeline.map((e) => e.seq)[0]).toBe(1);
    expect(await store.journalFor('exe_none')).toEqual([]);
  });
});
