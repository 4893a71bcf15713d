import { beforeEach, expect, it } from 'vitest';
import { approvalRequest, claimInput } from '../../../test/support/claim-input.js';
import type { ApprovalRequestInput, ClaimInput, ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { LONG_MS, PAST_SHORT_LEASE_MS, SHORT_LEASE_MS } from './fixtures.contract.js';

describeEveryStore('approvals', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { claimWon, elapse } = t;
  const waitingFor = (overrides: Partial<ApprovalRequestInput> = {}, claim: Partial<ClaimInput> = {}) =>
    claimWon({ state: 'awaiting_approval', approval: approvalRequest(overrides), ...claim });

  it('the claim writes the approval request with it; a lost claim writes none', async () => {
    const { input, record } = await waitingFor({ earlier: 'exe_01EARLIER' });
    const approval = await store.getApproval(input.id);
    expect(approval).toEqual({
      executionId: input.id,
      policy: 'every_call',
      channel: 'mcp',
      target: 'payments',
      credentialRef: 'stripe-live',
      earlier: 'exe_01EARLIER',
      requestedAt: record.createdAt,
      expiresAt: record.createdAt + LONG_MS,
      decision: null,
      decidedBy: null,
      decidedVia: null,
      decidedAt: null,
      reason: null,
    });
    const loser = claimInput({
      fingerprint: input.fingerprint,
      state: 'awaiting_approval',
      approval: approvalRequest(),
    });
    expect((await store.claim(loser)).won).toBe(false);
    expect(await store.getApproval(loser.id)).toBeUndefined();
    // Only a claim that waits for approval has a request.
    const { input: plain } = await claimWon({ approval: approvalRequest() });
    expect(await store.getApproval(plain.id)).toBeUndefined();
  });

  it('approve: authorized with no holder, the decision kept with who, how and when, journaled with it', async () => {
    const { input } = await waitingFor();
    const before = await store.now();
    const result = await store.decideApproval({
      id: input.id,
      decision: 'approved',
      by: 'operator:bob',
      via: 'cli',
      events: [{ kind: 'authorized', executionId: input.id, detail: { by: 'operator:bob', via: 'cli' } }],
    });
    expect(result.decided).toBe(true);
    expect(result.record).toMatchObject({ state: 'authorized', leaseOwner: null, leaseExpiresAt: null });
    expect(result.approval).toMatchObject({
      decision: 'approved',
      decidedBy: 'operator:bob',
      decidedVia: 'cli',
    });
    expect(result.approval?.decidedAt).toBeGreaterThanOrEqual(before);
    expect(await store.getApproval(input.id)).toEqual(result.approval);
    const journal = await store.journalFor(input.id);
    expect(journal.map((e) => e.kind)).toEqual(['authorized']);
    // Whoever holds the claim token no longer holds anything: the next caller dispatches it.
    const held = await store.transition({
      id: input.id,
      from: ['authorized'],
      to: 'dispatched',
      token: input.claimToken,
    });
    expect(held).toBeUndefined();
  });

  it('deny: denied with the reason as its note; a later decision is refused and told how it stands', async () => {
    const { input } = await waitingFor();
    const denied = await store.decideApproval({
      id: input.id,
      decision: 'denied',
      by: 'operator:carol',
      via: 'console',
      reason: 'not during the freeze',
    });
    expect(denied.decided).toBe(true);
    expect(denied.record).toMatchObject({ state: 'denied', note: 'not during the freeze' });
    const late = await store.decideApproval({
      id: input.id,
      decision: 'approved',
      by: 'operator:bob',
      via: 'cli',
      events: [{ kind: 'authorized', executionId: input.id }],
    });
    expect(late.decided).toBe(false);
    expect(late.record?.state).toBe('denied');
    expect(late.approval).toMatchObject({
      decision: 'denied',
      decidedBy: 'operator:carol',
      decidedVia: 'console',
      reason: 'not during the freeze',
    });
    // The loser's events are not journaled.
    expect(await store.journalFor(input.id)).toEqual([]);
  });

  it('of concurrent approvals and denials exactly one is applied', async () => {
    const { input } = await waitingFor();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store.decideApproval({
          id: input.id,
          decision: i % 2 === 0 ? 'approved' : 'denied',
          by: `operator:${i}`,
          via: 'cli',
          events: [{ kind: i % 2 === 0 ? 'authorized' : 'denied', executionId: input.id }],
        }),
      ),
    );
    const winners = results.filter((r) => r.decided);
    expect(winners).toHaveLength(1);
    const final = await store.getApproval(input.id);
    expect(final?.decidedBy).toBe(winners[0]?.approval?.decidedBy);
    for (const loser of results.filter((r) => !r.decided)) expect(loser.approval).toEqual(final);
    expect(await store.journalFor(input.id)).toHaveLength(1);
  });

  it('expiry: not before its time; after it, approval and denial are refused and it ends denied as expired', async () => {
    const { input } = await waitingFor({ expiresInMs: SHORT_LEASE_MS });
    const expire = () =>
      store.decideApproval({ id: input.id, decision: 'expired', by: 'idem', via: 'expiry' });
    expect((await expire()).decided).toBe(false);
    await elapse(PAST_SHORT_LEASE_MS);
    const late = await store.decideApproval({
      id: input.id,
      decision: 'approved',
      by: 'bob',
      via: 'cli',
    });
    expect(late).toMatchObject({ decided: false, record: { state: 'awaiting_approval' } });
    const expired = await expire();
    expect(expired.decided).toBe(true);
    expect(expired.record).toMatchObject({ state: 'denied', note: 'expired' });
    expect(expired.approval).toMatchObject({
      decision: 'expired',
      decidedVia: 'expiry',
      reason: 'expired',
    });
  });

  it('an approval under the session policy approves that session for that tool, in the store', async () => {
    const { input } = await waitingFor({ policy: 'session' }, { session: 'ses_A', tool: 'deploy' });
    expect(await store.sessionApproved(input.actor, 'ses_A', 'deploy')).toBe(false);
    await store.decideApproval({ id: input.id, decision: 'approved', by: 'bob', via: 'elicitation' });
    expect(await store.sessionApproved(input.actor, 'ses_A', 'deploy')).toBe(true);
    expect(await store.sessionApproved(input.actor, 'ses_B', 'deploy')).toBe(false);
    expect(await store.sessionApproved(input.actor, 'ses_A', 'other')).toBe(false);
    expect(await store.sessionApproved('user:mallory', 'ses_A', 'deploy')).toBe(false);
    // every_call approvals and denials approve no session.
    const { input: once } = await waitingFor({}, { session: 'ses_C', tool: 'deploy' });
    await store.decideApproval({ id: once.id, decision: 'approved', by: 'bob', via: 'cli' });
    expect(await store.sessionApproved(once.actor, 'ses_C', 'deploy')).toBe(false);
    const { input: no } = await waitingFor({ policy: 'session' }, { session: 'ses_D', tool: 'deploy' });
    await store.decideApproval({ id: no.id, decision: 'denied', by: 'bob', via: 'cli' });
    expect(await store.sessionApproved(no.actor, 'ses_D', 'deploy')).toBe(false);
  });

  it('lists pending requests, newest first, and trims a request with its execution', async () => {
    const a = await waitingFor();
    const b = await waitingFor();
    const c = await waitingFor();
    await store.decideApproval({ id: b.input.id, decision: 'denied', by: 'bob', via: 'cli' });
    expect((await store.listApprovals({ pending: true })).map((r) => r.executionId)).toEqual([
      c.input.id,
      a.input.id,
    ]);
    expect((await store.listApprovals()).map((r) => r.executionId)).toEqual([
      c.input.id,
      b.input.id,
      a.input.id,
    ]);
    expect(await store.listApprovals({ limit: 1 })).toHaveLength(1);
    await elapse(5);
    expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(1);
    expect(await store.getApproval(b.input.id)).toBeUndefined();
    expect(await store.getApproval(a.input.id)).toBeDefined();
  });
});
