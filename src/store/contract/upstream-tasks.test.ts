import { beforeEach, expect, it } from 'vitest';
import { upstreamTaskEvent } from '../../journal/task-events.js';
import type { ExecutionStore, UpstreamTaskHandle } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import {
  AWKWARD_OUTCOME,
  HANDLE,
  LONG_MS,
  newId,
  newToken,
  PAST_SHORT_LEASE_MS,
  SHORT_LEASE_MS,
  stable,
  subject,
  taskInput,
} from './fixtures.contract.js';

describeEveryStore('upstream tasks', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { executionIn, elapse, kinds } = t;

  it("setUpstreamTask records the upstream's task for the dispatch's holder only", async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const events = () => [upstreamTaskEvent(subject(record), HANDLE, 'working')];
    const untouched = stable(await store.get(record.id));
    expect(untouched?.upstreamTask).toBeNull();

    expect(await store.setUpstreamTask(record.id, newToken(), HANDLE, events())).toBe(false);
    expect(await store.setUpstreamTask(newId(), claim.claimToken, HANDLE, events())).toBe(false);
    const waiting = await executionIn('accepted');
    expect(await store.setUpstreamTask(waiting.record.id, waiting.input.claimToken, HANDLE, events())).toBe(
      false,
    );
    expect(stable(await store.get(record.id))).toEqual(untouched);
    expect((await store.get(waiting.record.id))?.upstreamTask).toBeNull();
    expect(await store.readJournal()).toEqual([]);

    await elapse(5);
    expect(await store.setUpstreamTask(record.id, claim.claimToken, HANDLE, events())).toBe(true);
    const following = await store.get(record.id);
    expect(following?.upstreamTask).toEqual(HANDLE);
    expect(following!.updatedAt).toBeGreaterThan(record.updatedAt);
    expect(stable({ ...following!, updatedAt: record.updatedAt, upstreamTask: null })).toEqual(untouched);
    const journaled = await kinds('upstream_task');
    expect(journaled).toHaveLength(1);
    expect(journaled[0]).toMatchObject({
      executionId: record.id,
      detail: {
        generation: 'v1',
        upstream: 'research',
        upstreamTaskId: HANDLE.taskId,
        status: 'working',
      },
    });
  });

  it('list({ upstreamTask: true }) lists only the executions that carry an upstream task', async () => {
    const carrying = await executionIn('dispatched');
    await store.setUpstreamTask(carrying.record.id, carrying.input.claimToken, HANDLE);
    await executionIn('dispatched');
    await executionIn('unknown');
    const listed = await store.list({ state: ['dispatched', 'unknown'], upstreamTask: true });
    expect(listed.map((r) => r.id)).toEqual([carrying.record.id]);
    expect(listed[0]?.upstreamTask).toEqual(HANDLE);
    expect(await store.list({ state: 'completed', upstreamTask: true })).toEqual([]);
    expect(await store.list({ state: ['dispatched', 'unknown'] })).toHaveLength(3);
  });

  it('a transition on leaseExpiresAt applies only while the lease ends when it was read: of two takers, one wins', async () => {
    const { input, record } = await executionIn('dispatched', { leaseMs: SHORT_LEASE_MS });
    await store.setUpstreamTask(record.id, input.claimToken, HANDLE);
    await elapse(PAST_SHORT_LEASE_MS);
    const read = (await store.get(record.id))!;
    expect(read.leaseExpiresAt).not.toBeNull();
    const takeOver = (owner: string) =>
      store.transition({
        id: record.id,
        from: ['dispatched', 'unknown'],
        to: 'dispatched',
        requireStale: true,
        leaseExpiresAt: read.leaseExpiresAt,
        holder: { token: newToken(), owner, leaseMs: LONG_MS },
        events: [{ kind: 'upstream_task_resumed', executionId: record.id, detail: { owner } }],
      });
    const results = await Promise.all([takeOver('gateway-a'), takeOver('gateway-b')]);
    const won = results.filter((r) => r !== undefined);
    expect(won).toHaveLength(1);
    expect(won[0]!.leaseExpiresAt).toBeGreaterThan(read.leaseExpiresAt!);
    expect(await kinds('upstream_task_resumed')).toHaveLength(1);
    // The one holding it now is not taken over on the old reading, nor is a renewed lease.
    expect(await takeOver('gateway-c')).toBeUndefined();
    expect(await store.renewLease(record.id, input.claimToken, LONG_MS)).toBe(false);
    // A lease that is still what was read (null: none) is matched as such.
    const none = await executionIn('unknown');
    const cleared = await store.transition({
      id: none.record.id,
      from: ['unknown'],
      to: 'unknown',
      holder: null,
    });
    expect(cleared?.leaseExpiresAt).toBeNull();
    const onNull = await store.transition({
      id: none.record.id,
      from: ['unknown'],
      to: 'unknown',
      leaseExpiresAt: null,
      note: 'matched on no lease',
    });
    expect(onNull?.note).toBe('matched on no lease');
  });

  it('an upstream task is kept exactly (only its own fields) and shows wherever the execution is read', async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const task = await store.openTask(taskInput(record.id));
    const odd = {
      generation: 'v2',
      upstream: 'räksmörgås',
      taskId: 'id "quoted" \\ 東京 🧾 \u2028',
      createdAt: 1_764_000_000_123,
      attached: 'not a field of a handle',
    } as UpstreamTaskHandle;
    expect(await store.setUpstreamTask(record.id, claim.claimToken, odd)).toBe(true);
    const kept = {
      generation: 'v2',
      upstream: 'räksmörgås',
      taskId: odd.taskId,
      createdAt: odd.createdAt,
    };
    expect((await store.get(record.id))?.upstreamTask).toStrictEqual(kept);
    expect((await store.findActive(claim.fingerprint))?.upstreamTask).toStrictEqual(kept);
    expect((await store.list()).find((r) => r.id === record.id)?.upstreamTask).toStrictEqual(kept);
    expect((await store.getTask(task.taskId))?.record.upstreamTask).toStrictEqual(kept);
    // A later status replaces it; the outcome leaves it in place.
    expect(await store.setUpstreamTask(record.id, claim.claimToken, HANDLE)).toBe(true);
    const done = await store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'completed',
      token: claim.claimToken,
      holder: null,
      outcome: AWKWARD_OUTCOME,
    });
    expect(done?.upstreamTask).toEqual(HANDLE);
    expect(await store.setUpstreamTask(record.id, claim.claimToken, odd)).toBe(false);
  });
});
