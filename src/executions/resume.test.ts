import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { claimInput } from '../../test/support/claim-input.js';
import { Gate, manualClock } from '../../test/support/gate.js';
import { freshDir, removeTemporaries } from '../../test/support/temp-dirs.js';
import { PATIENTLY } from '../../test/support/wait.js';
import { resolveContract } from '../contracts/contract.js';
import { OutcomeUnknownError } from '../errors.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import type { ActivityEntry } from '../journal/events.js';
import { rebuildStates } from '../journal/rebuild.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ToolResult } from '../store/outcome.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import type { ExecutionRecord, ExecutionStore, UpstreamTaskHandle } from '../store/types.js';
import { ExecutionEngine } from './engine.js';
import { resumable, type UpstreamTaskFollower, type UpstreamTaskFollowers } from './resume.js';

afterAll(removeTemporaries);

const fingerprinter = new Fingerprinter(randomBytes(32));
const HANDLE: UpstreamTaskHandle = {
  generation: 'v1',
  upstream: 'research',
  taskId: 'upstream-task-1',
  pollIntervalMs: 100,
  createdAt: 1_764_000_000_000,
};
const LEASE_MS = 1_000;
const REPORT: ToolResult = { content: [{ type: 'text', text: 'the report' }] };

/** A record as a store would read it, `readAt` 10 s in, its lease ended at 5 s unless told. */
function record(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    id: 'exe_1',
    fingerprint: 'fp',
    requestDigest: null,
    actor: 'user:alice',
    tool: 'research',
    session: null,
    replay: 'review',
    state: 'dispatched',
    createdAt: 0,
    updatedAt: 0,
    attachUntil: 0,
    dispatchedAt: 0,
    deadlineAt: 600_000,
    leaseOwner: 'gw-dead',
    leaseExpiresAt: 5_000,
    outcome: null,
    deliveredAt: null,
    argumentsPreview: '{}',
    note: null,
    upstreamTask: HANDLE,
    readAt: 10_000,
    ...overrides,
  };
}
const event = (kind: ActivityEntry['kind'], detail: Record<string, unknown> = {}) =>
  ({ kind, detail }) as Pick<ActivityEntry, 'kind' | 'detail'>;
const upTo = (...last: Pick<ActivityEntry, 'kind' | 'detail'>[]) => [
  event('accepted'),
  event('dispatched'),
  event('upstream_task', { upstream: 'research' }),
  ...last,
];

describe('resumable: which executions may be taken over to follow their upstream task again', () => {
  it('a dispatched one whose holder’s lease lapsed, following an upstream task, without an outcome', () => {
    expect(resumable(record(), upTo())).toBe(true);
    expect(resumable(record({ leaseExpiresAt: 10_000 }), upTo()), 'a lease ending now has ended').toBe(true);
  });

  it('not while its holder’s lease runs, even past the dispatch deadline (the holder still follows)', () => {
    expect(resumable(record({ leaseExpiresAt: 10_001 }), upTo())).toBe(false);
    expect(resumable(record({ leaseExpiresAt: 20_000, deadlineAt: 1_000 }), upTo())).toBe(false);
  });

  it('not without an upstream task, with an outcome, without a lease, or in any other state', () => {
    expect(resumable(record({ upstreamTask: null }), upTo())).toBe(false);
    expect(resumable(record({ outcome: { result: REPORT } }), upTo())).toBe(false);
    expect(resumable(record({ leaseExpiresAt: null }), upTo())).toBe(false);
    for (const state of ['accepted', 'authorized', 'completed', 'failed', 'denied'] as const)
      expect(resumable(record({ state }), upTo(event('lease_expired')))).toBe(false);
  });

  it('an unknown one only when the follower was still at work: a lapsed lease, or the caller’s wait ended first', () => {
    const unknown = record({ state: 'unknown' });
    expect(resumable(unknown, upTo(event('lease_expired', { state: 'unknown' })))).toBe(true);
    expect(resumable(unknown, upTo(event('outcome', { state: 'unknown', reason: 'timeout' })))).toBe(true);
    expect(resumable(unknown, upTo(event('outcome', { state: 'unknown', reason: 'cancelled' })))).toBe(true);
    // Events that change no state after it change nothing.
    expect(resumable(unknown, upTo(event('lease_expired'), event('task_created'), event('delivered')))).toBe(
      true,
    );
  });

  it('never an unknown the follower concluded, nor one a resumed follower concluded', () => {
    const unknown = record({ state: 'unknown' });
    expect(resumable(unknown, upTo(event('outcome', { state: 'unknown' })))).toBe(false);
    expect(
      resumable(
        unknown,
        upTo(
          event('outcome', { state: 'unknown', reason: 'timeout' }),
          event('outcome', { state: 'unknown' }),
        ),
      ),
    ).toBe(false);
    expect(
      resumable(
        unknown,
        upTo(
          event('lease_expired'),
          event('upstream_task_resumed'),
          event('outcome', { state: 'unknown', resumed: true, why: 'forgot' }),
        ),
      ),
    ).toBe(false);
    expect(resumable(unknown, [])).toBe(false);
  });
});

/** A follower the test holds: it counts its follows, and ends each as the test says. */
function heldFollower() {
  const gate = new Gate();
  const follows: UpstreamTaskHandle[] = [];
  let end: () => Promise<ToolResult> = async () => REPORT;
  const follower: UpstreamTaskFollower = {
    async follow(handle) {
      follows.push(handle);
      await gate.wait();
      return end();
    },
  };
  return {
    gate,
    follows,
    endWith(how: () => Promise<ToolResult>) {
      end = how;
    },
    followers: (async () => follower) as UpstreamTaskFollowers,
  };
}

function engineOn(store: ExecutionStore, owner: string): ExecutionEngine {
  const engine = new ExecutionEngine({ store, fingerprinter, owner });
  engine.registerContract('research', resolveContract({ replay: 'review', lease: '1s' }, undefined));
  return engine;
}

/** A dispatched execution following HANDLE, whose holder stopped renewing: its lease has lapsed. */
async function lostHolder(
  store: ExecutionStore,
  clock: ReturnType<typeof manualClock>,
  handle: UpstreamTaskHandle = HANDLE,
) {
  const claim = claimInput({
    state: 'dispatched',
    dispatchTimeoutMs: 600_000,
    leaseMs: LEASE_MS,
    tool: 'research',
  });
  const { record: claimed } = (await store.claim(claim, {
    events: [{ kind: 'dispatched', executionId: claim.id }],
  })) as { record: ExecutionRecord };
  expect(await store.setUpstreamTask(claimed.id, claim.claimToken, handle)).toBe(true);
  clock.advance(LEASE_MS + 1);
  return claimed;
}

const kinds = async (store: ExecutionStore, id: string) => (await store.journalFor(id)).map((e) => e.kind);

const backends = {
  memory: (clock: ReturnType<typeof manualClock>) => {
    const store = new MemoryStore({ clock: clock.now });
    return { stores: [store, store] as const, close: async () => {} };
  },
  // Two handles on one database file: two gateways of one host.
  sqlite: async (clock: ReturnType<typeof manualClock>) => {
    const path = join(freshDir('resume'), 'idem.db');
    const a = await SqliteStore.open({ path, clock: clock.now });
    const b = await SqliteStore.open({ path, clock: clock.now });
    return { stores: [a, b] as const, close: async () => Promise.all([a.close(), b.close()]) };
  },
};

describe.each(Object.keys(backends) as (keyof typeof backends)[])('resuming on the %s store', (kind) => {
  it('two resumers race for a lost holder: one wins, follows once, and records the real outcome', async () => {
    const clock = manualClock();
    const { stores, close } = await backends[kind](clock);
    try {
      const lost = await lostHolder(stores[0], clock);
      const held = heldFollower();
      const [a, b] = [engineOn(stores[0], 'gw-a'), engineOn(stores[1], 'gw-b')];
      const [wonA, wonB] = await Promise.all([
        a.resumeUpstreamTasks(held.followers),
        b.resumeUpstreamTasks(held.followers),
      ]);
      expect([...wonA, ...wonB]).toEqual([lost.id]);
      expect(held.follows).toEqual([HANDLE]);
      const winner = wonA.length === 1 ? 'gw-a' : 'gw-b';
      const following = await stores[0].get(lost.id);
      expect(following).toMatchObject({ state: 'dispatched', leaseOwner: winner, outcome: null });
      // Taken over, it is no longer a lost holder's: nobody takes it again.
      expect(await a.resumeUpstreamTasks(held.followers)).toEqual([]);
      expect(await b.resumeUpstreamTasks(held.followers)).toEqual([]);
      const resumed = (await stores[0].journalFor(lost.id)).filter((e) => e.kind === 'upstream_task_resumed');
      expect(resumed).toHaveLength(1);
      expect(resumed[0]?.detail).toEqual({
        generation: 'v1',
        upstream: 'research',
        upstreamTaskId: HANDLE.taskId,
        from: 'dispatched',
        owner: winner,
      });

      // The lease is renewed while it follows (the store's clock moved on; the renewal follows it).
      clock.advance(10);
      await vi.waitFor(async () => {
        expect((await stores[0].get(lost.id))!.leaseExpiresAt).toBeGreaterThan(following!.leaseExpiresAt!);
      }, PATIENTLY);

      held.gate.open();
      await vi.waitFor(
        async () => expect((await stores[0].get(lost.id))?.state).toBe('completed'),
        PATIENTLY,
      );
      const done = await stores[0].get(lost.id);
      expect(done).toMatchObject({ outcome: { result: REPORT }, leaseOwner: null, leaseExpiresAt: null });
      expect(held.follows).toHaveLength(1);
      const journal = await stores[0].journalFor(lost.id);
      expect(journal.map((e) => e.kind)).toEqual(['dispatched', 'upstream_task_resumed', 'outcome']);
      expect(journal.at(-1)?.detail).toMatchObject({ state: 'completed', resumed: true });
      expect(rebuildStates(journal).get(lost.id)).toBe('completed');
      await a.stopFollowing();
      await b.stopFollowing();
    } finally {
      await close();
    }
  });

  it('an unknown made so by the lapse (a sweep) is taken over too; an isError result is recorded failed', async () => {
    const clock = manualClock();
    const { stores, close } = await backends[kind](clock);
    try {
      const lost = await lostHolder(stores[0], clock);
      expect((await stores[1].sweep({ retentionMs: 60_000 })).expired.map((r) => r.id)).toEqual([lost.id]);
      const held = heldFollower();
      held.endWith(async () => ({ isError: true, content: [{ type: 'text', text: 'the disk is full' }] }));
      held.gate.open();
      const engine = engineOn(stores[1], 'gw-b');
      expect(await engine.resumeUpstreamTasks(held.followers)).toEqual([lost.id]);
      await engine.stopFollowing();
      const done = await stores[0].get(lost.id);
      expect(done?.state).toBe('failed');
      expect(done?.outcome?.result.isError).toBe(true);
      const journal = await stores[0].journalFor(lost.id);
      expect(journal.map((e) => e.kind)).toEqual([
        'dispatched',
        'lease_expired',
        'upstream_task_resumed',
        'outcome',
      ]);
      expect(journal[2]?.detail.from).toBe('unknown');
      expect(rebuildStates(journal).get(lost.id)).toBe('failed');
    } finally {
      await close();
    }
  });

  it('an upstream that forgot the task, or is not configured any more: unknown, saying why, and never taken up again', async () => {
    const clock = manualClock();
    const { stores, close } = await backends[kind](clock);
    try {
      const forgotten = await lostHolder(stores[0], clock);
      const gone = await lostHolder(stores[0], clock, { ...HANDLE, upstream: 'removed', taskId: 't-2' });
      const follows: string[] = [];
      const forgetful: UpstreamTaskFollower = {
        async follow(handle) {
          follows.push(handle.taskId);
          throw new OutcomeUnknownError(`the upstream no longer knows its task ${handle.taskId}`);
        },
      };
      const followers: UpstreamTaskFollowers = async (handle) =>
        handle.upstream === 'research' ? forgetful : undefined;
      const engine = engineOn(stores[0], 'gw-a');
      expect(await engine.resumeUpstreamTasks(followers)).toHaveLength(2);
      await engine.stopFollowing();
      for (const id of [forgotten.id, gone.id]) {
        const done = await stores[0].get(id);
        expect(done).toMatchObject({ state: 'unknown', outcome: null, leaseExpiresAt: null });
      }
      expect(follows).toEqual([HANDLE.taskId]);
      const whys = await Promise.all(
        [forgotten.id, gone.id].map(async (id) => (await stores[0].journalFor(id)).at(-1)?.detail.why),
      );
      expect(whys).toEqual([
        expect.stringContaining('the upstream no longer knows its task upstream-task-1'),
        expect.stringContaining('is not configured any more'),
      ]);
      clock.advance(60_000);
      const later = engineOn(stores[1], 'gw-b');
      expect(await later.resumeUpstreamTasks(followers)).toEqual([]);
      expect(follows).toHaveLength(1);
      expect(await kinds(stores[0], forgotten.id)).toEqual([
        'dispatched',
        'upstream_task_resumed',
        'outcome',
      ]);
    } finally {
      await close();
    }
  });

  it('a resumed following cut short by closing is not recorded: the next resumer takes it up', async () => {
    const clock = manualClock();
    const { stores, close } = await backends[kind](clock);
    try {
      const lost = await lostHolder(stores[0], clock);
      const held = heldFollower();
      held.endWith(async () => {
        throw new OutcomeUnknownError('the connection to upstream research was lost');
      });
      const closing = engineOn(stores[0], 'gw-a');
      expect(await closing.resumeUpstreamTasks(held.followers)).toEqual([lost.id]);
      const settled = closing.stopFollowing();
      held.gate.open();
      await settled;
      expect(await stores[0].get(lost.id)).toMatchObject({
        state: 'dispatched',
        leaseOwner: 'gw-a',
        outcome: null,
      });

      clock.advance(LEASE_MS + 1);
      const next = heldFollower();
      next.gate.open();
      const restarted = engineOn(stores[1], 'gw-b');
      expect(await restarted.resumeUpstreamTasks(next.followers)).toEqual([lost.id]);
      await restarted.stopFollowing();
      expect(await stores[0].get(lost.id)).toMatchObject({ state: 'completed', outcome: { result: REPORT } });
    } finally {
      await close();
    }
  });
});
