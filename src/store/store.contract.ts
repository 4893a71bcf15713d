/**
 * The one contract suite every ExecutionStore must pass (memory, SQLite,
 * PostgreSQL): each backend's test file calls `describeStoreContract` with its opener.
 * Exempt from the 400-line rule: it is one suite for all backends, one list of
 * behaviours grouped by `describe` (claim, transitions, leases, sweep, journal, …).
 * Split into files, a backend would be checked against whichever files its test
 * remembered to call, and a reader could no longer check it against the contract in one place.
 */
import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { approvalRequest, claimInput, newFingerprint } from '../../test/support/claim-input.js';
import { chainProblems } from '../../test/support/journal-chains.js';
import { sleep } from '../../test/support/wait.js';
import type { ActivityEntry, ActivityEventInput } from '../journal/events.js';
import { OUTCOME_DIGEST_FIELD, outcomeDigest, storedOutcomeDigest } from '../journal/outcome-digest.js';
import type { ExecutionState } from '../journal/states.js';
import {
  taskCancelEvent,
  taskCreatedEvent,
  taskInputAnsweredEvent,
  taskInputAskedEvent,
  upstreamTaskEvent,
} from '../journal/task-events.js';
import { TRIM_JOURNALED_FIELD, TRIMMED_IDS_FIELD } from '../journal/trims.js';
import type { StoredOutcome } from './outcome.js';
import type {
  ApprovalRequestInput,
  ClaimInput,
  ExecutionRecord,
  ExecutionStore,
  OpenTaskInput,
  UpstreamTaskHandle,
} from './types.js';

export interface OpenedStore {
  /** A fresh, empty store. */
  store: ExecutionStore;
  /**
   * The store's clock, when the test controls it. Without one, the suite lets
   * real time pass (short waits), so a store that reads its database's clock
   * passes unchanged.
   */
  clock?: { advance(ms: number): void };
  /** Closes the store and removes whatever it left behind. */
  cleanup(): Promise<void>;
}

const LONG_MS = 10 * 60_000;
/** A lease meant to run out during the test, and how long to wait for it to. */
const SHORT_LEASE_MS = 60;
const PAST_SHORT_LEASE_MS = 150;

const nextUlid = monotonicFactory();
const newId = (): string => `exe_${nextUlid()}`;
const newToken = (): string => `tok_${randomBytes(18).toString('base64url')}`;
const newTaskId = (): string => `tsk_${randomBytes(32).toString('base64url')}`;

/** Everything a caller can observe of a record, minus the moment it was read. */
function stable(record: ExecutionRecord | undefined): Omit<ExecutionRecord, 'readAt'> | undefined {
  if (record === undefined) return undefined;
  const { readAt: _readAt, ...rest } = record;
  return rest;
}

/** A result that survives only an exact round trip: deep nesting, awkward strings and numbers. */
const AWKWARD_OUTCOME: StoredOutcome = {
  result: {
    content: [
      {
        type: 'text',
        text: 'Charged €12,00 — ✓ 東京 🧾 e\u0301 \u202Eevil\u202C line\u2028sep "quoted" \\ back\nnew',
      },
      { type: 'text', text: 'nul \u0000 and lone \ud800 surrogate' },
    ],
    structuredContent: {
      id: 'ch_3Nx',
      amounts: [0, -1, 1.5, 0.1, 1e-7, 1e21, 2 ** 53 - 1, -(2 ** 53 - 1), 123456789.125],
      nested: [[[]], [[1, [2, [3, { deep: [true, false, null] }]]]], {}],
      flags: { ok: true, none: null, empty: '' },
      'clé 🔑': 'valeur',
    },
    isError: false,
  },
};

/**
 * The behaviour every ExecutionStore must show (src/store/types.ts). Each
 * backend's test file calls this with a factory for fresh stores; a backend
 * is done when this suite passes on it unchanged.
 */
export function describeStoreContract(name: string, open: () => Promise<OpenedStore>): void {
  describe(`ExecutionStore contract: ${name}`, () => {
    let opened: OpenedStore;
    let store: ExecutionStore;

    beforeEach(async () => {
      opened = await open();
      store = opened.store;
    });

    afterEach(async () => {
      await opened.cleanup();
    });

    async function elapse(ms: number): Promise<void> {
      if (opened.clock) opened.clock.advance(ms);
      else await sleep(ms);
    }

    async function claimWon(overrides: Partial<ClaimInput> = {}, events?: ActivityEventInput[]) {
      const input = claimInput(overrides);
      const result = await store.claim(input, events ? { events } : undefined);
      if (!result.won) throw new Error(`claim of ${input.id} unexpectedly lost`);
      return { input, record: result.record };
    }

    /** An execution in `state`, reached the way the engine gets there. */
    async function executionIn(state: ExecutionState, overrides: Partial<ClaimInput> = {}) {
      const { input, record } = await claimWon(overrides);
      if (state === 'accepted') return { input, record };
      if (state === 'awaiting_approval' || state === 'denied' || state === 'authorized') {
        const waiting = await store.transition({
          id: record.id,
          from: ['accepted'],
          to: 'awaiting_approval',
        });
        if (state === 'awaiting_approval') return { input, record: waiting! };
        const decided = await store.transition({ id: record.id, from: ['awaiting_approval'], to: state });
        return { input, record: decided! };
      }
      const dispatched = await store.transition({
        id: record.id,
        from: ['accepted'],
        to: 'dispatched',
        token: input.claimToken,
        dispatchTimeoutMs: LONG_MS,
      });
      if (state === 'dispatched') return { input, record: dispatched! };
      const finished = await store.transition({
        id: record.id,
        from: ['dispatched'],
        to: state,
        token: input.claimToken,
        holder: null,
        ...(state === 'completed' || state === 'failed'
          ? {
              outcome: {
                result: { content: [{ type: 'text' as const, text: state }], isError: state === 'failed' },
              },
            }
          : {}),
      });
      return { input, record: finished! };
    }

    describe('claim', () => {
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
          inputs.map((input) =>
            store.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] }),
          ),
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

    describe('transition', () => {
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
    });

    describe('renewLease', () => {
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

    describe('markDelivered', () => {
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

    describe('get, findActive and list', () => {
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
        expect(ids(await store.list({ text: 'user:alice', limit: 1 }))).toEqual(
          newestFirst(a, c).slice(0, 1),
        );

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
    });

    describe('journal', () => {
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
    });

    describe('journal streams, timelines and release', () => {
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
        await store.appendEvents(
          [{ kind: 'session_end', actor: 'user:alice', requestRef: 'ses_1' }],
          'sessions',
        );
        const sessions = await store.readJournal(0, 100, 'sessions');
        expect(sessions.map((e) => [e.seq, e.kind])).toEqual([
          [1, 'session_start'],
          [2, 'session_end'],
        ]);
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
        expect(timeline.map((e) => e.seq)).toEqual([1, 3, 4]);
        expect(await store.journalFor('exe_none')).toEqual([]);
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

    describe('sweep', () => {
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
        const old = [
          await executionIn('completed'),
          await executionIn('failed'),
          await executionIn('denied'),
        ];
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

    describe('approvals', () => {
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

    describe('tasks', () => {
      const taskInput = (executionId: string, overrides: Partial<OpenTaskInput> = {}): OpenTaskInput => ({
        taskId: newTaskId(),
        executionId,
        actor: 'user:alice',
        generation: 'v2',
        ttlMs: 48 * 3_600_000,
        pollIntervalMs: 1_000,
        ...overrides,
      });
      const subject = (record: ExecutionRecord, actor = record.actor) => ({
        executionId: record.id,
        actor,
        tool: record.tool,
      });
      const created = (record: ExecutionRecord, input: OpenTaskInput) => [
        taskCreatedEvent(subject(record, input.actor), input),
      ];
      const kinds = async (kind: ActivityEntry['kind']) =>
        (await store.readJournal()).filter((e) => e.kind === kind);
      const HANDLE: UpstreamTaskHandle = {
        generation: 'v1',
        upstream: 'research',
        taskId: 'a1b2c3d4-upstream',
        pollIntervalMs: 250,
        createdAt: 1_764_000_000_000,
      };

      it("openTask creates the pair's task at the store's time, once: a repeat gets it unchanged and journals nothing", async () => {
        const { record } = await executionIn('dispatched');
        const before = await store.now();
        const input = taskInput(record.id, { actor: record.actor });
        const task = await store.openTask(input, created(record, input));
        const after = await store.now();
        expect(task).toEqual({
          taskId: input.taskId,
          executionId: record.id,
          actor: record.actor,
          generation: 'v2',
          createdAt: task.createdAt,
          ttlMs: 48 * 3_600_000,
          pollIntervalMs: 1_000,
          cancelRequestedAt: null,
        });
        expect(task.createdAt).toBeGreaterThanOrEqual(before);
        expect(task.createdAt).toBeLessThanOrEqual(after);

        await elapse(5);
        const repeat = taskInput(record.id, {
          actor: record.actor,
          generation: 'v1',
          ttlMs: null,
          pollIntervalMs: 5,
        });
        expect(await store.openTask(repeat, created(record, repeat))).toEqual(task);
        expect(await store.findTask(record.id, record.actor)).toEqual(task);
        expect(await store.getTask(repeat.taskId)).toBeUndefined();
        const journaled = await kinds('task_created');
        expect(journaled).toHaveLength(1);
        expect(journaled[0]).toMatchObject({
          executionId: record.id,
          actor: record.actor,
          tool: record.tool,
          detail: { taskId: input.taskId, generation: 'v2', ttlMs: 48 * 3_600_000 },
        });
        expect(chainProblems(await store.readJournal())).toEqual([]);
      });

      it('of concurrent openTask calls for one pair, or requestTaskCancel calls for one task, one writes', async () => {
        const { record } = await executionIn('dispatched');
        const inputs = Array.from({ length: 12 }, () => taskInput(record.id));
        const tasks = await Promise.all(inputs.map((input) => store.openTask(input, created(record, input))));
        expect(new Set(tasks.map((t) => t.taskId)).size).toBe(1);
        expect(inputs.map((i) => i.taskId)).toContain(tasks[0]!.taskId);
        expect(await kinds('task_created')).toHaveLength(1);

        const cancel = [taskCancelEvent(subject(record, 'user:alice'), tasks[0]!.taskId, 'outcome')];
        const cancels = await Promise.all(
          inputs.map(() => store.requestTaskCancel(tasks[0]!.taskId, cancel)),
        );
        expect(new Set(cancels.map((t) => t?.cancelRequestedAt)).size).toBe(1);
        expect(cancels[0]?.cancelRequestedAt).not.toBeNull();
        expect(await kinds('task_cancel')).toHaveLength(1);
        expect(chainProblems(await store.readJournal())).toEqual([]);
      });

      it('two actors on one execution (a business-key scope shares it) get two tasks', async () => {
        const { record } = await executionIn('dispatched');
        const alice = taskInput(record.id, { actor: 'user:alice' });
        const bob = taskInput(record.id, { actor: 'user:bob', generation: 'v1', ttlMs: null });
        const first = await store.openTask(alice, created(record, alice));
        const second = await store.openTask(bob, created(record, bob));
        expect(second.taskId).not.toBe(first.taskId);
        expect(second).toMatchObject({ actor: 'user:bob', generation: 'v1', ttlMs: null });
        expect(await store.findTask(record.id, 'user:alice')).toEqual(first);
        expect(await store.findTask(record.id, 'user:bob')).toEqual(second);
        expect(await store.findTask(record.id, 'user:carol')).toBeUndefined();
        expect(await kinds('task_created')).toHaveLength(2);
      });

      it('openTask on an execution that does not exist rejects, writing nothing', async () => {
        const input = taskInput(newId());
        const events = [
          taskCreatedEvent({ executionId: input.executionId, actor: 'user:alice', tool: 't' }, input),
        ];
        await expect(store.openTask(input, events)).rejects.toThrow(/no such execution/);
        expect(await store.getTask(input.taskId)).toBeUndefined();
        expect(await store.listTasks('user:alice', { limit: 10 })).toEqual([]);
        expect(await store.readJournal()).toEqual([]);
      });

      it('getTask returns the task with its execution as it is now; an unknown id is undefined', async () => {
        const { input: claim, record } = await executionIn('dispatched');
        const input = taskInput(record.id);
        const task = await store.openTask(input);
        const got = await store.getTask(input.taskId);
        expect(got?.task).toEqual(task);
        expect(stable(got?.record)).toEqual(stable(await store.get(record.id)));
        expect(got!.record.readAt).toBeGreaterThanOrEqual(task.createdAt);

        await store.transition({
          id: record.id,
          from: ['dispatched'],
          to: 'completed',
          token: claim.claimToken,
          holder: null,
          outcome: AWKWARD_OUTCOME,
        });
        const after = await store.getTask(input.taskId);
        expect(after?.record).toMatchObject({ id: record.id, state: 'completed', outcome: AWKWARD_OUTCOME });
        expect(after?.task).toEqual(task);
        expect(await store.getTask(newTaskId())).toBeUndefined();
      });

      it("listTasks pages through one actor's tasks in taskId order, and no one else's", async () => {
        const executions = [];
        for (let i = 0; i < 5; i++) executions.push((await executionIn('dispatched')).record);
        const alice = [];
        for (const record of executions) alice.push(await store.openTask(taskInput(record.id)));
        const bob = [];
        for (const record of executions.slice(0, 2))
          bob.push(await store.openTask(taskInput(record.id, { actor: 'user:bob' })));
        const byId = (tasks: { taskId: string }[]) =>
          tasks.map((t) => t.taskId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        const ids = byId(alice);

        const first = await store.listTasks('user:alice', { limit: 2 });
        expect(first.map((t) => t.taskId)).toEqual(ids.slice(0, 2));
        const second = await store.listTasks('user:alice', { after: first.at(-1)!.taskId, limit: 2 });
        expect(second.map((t) => t.taskId)).toEqual(ids.slice(2, 4));
        const third = await store.listTasks('user:alice', { after: second.at(-1)!.taskId, limit: 2 });
        expect(third.map((t) => t.taskId)).toEqual(ids.slice(4));
        expect(await store.listTasks('user:alice', { after: ids[4]!, limit: 2 })).toEqual([]);
        expect(third[0]).toEqual(alice.find((t) => t.taskId === ids[4]));

        expect((await store.listTasks('user:bob', { limit: 10 })).map((t) => t.taskId)).toEqual(byId(bob));
        expect(await store.listTasks('user:carol', { limit: 10 })).toEqual([]);
      });

      it('requestTaskCancel sets its time once: a second call moves nothing and journals nothing', async () => {
        const { record } = await executionIn('dispatched');
        const input = taskInput(record.id);
        const task = await store.openTask(input);
        const cancel = () => [taskCancelEvent(subject(record, input.actor), input.taskId, 'outcome')];
        await elapse(5);
        const before = await store.now();
        const first = await store.requestTaskCancel(input.taskId, cancel());
        const after = await store.now();
        expect(first).toEqual({ ...task, cancelRequestedAt: first!.cancelRequestedAt });
        expect(first!.cancelRequestedAt).toBeGreaterThanOrEqual(before);
        expect(first!.cancelRequestedAt).toBeLessThanOrEqual(after);

        await elapse(20);
        expect(await store.requestTaskCancel(input.taskId, cancel())).toEqual(first);
        expect((await store.getTask(input.taskId))?.task).toEqual(first);
        const journaled = await kinds('task_cancel');
        expect(journaled).toHaveLength(1);
        expect(journaled[0]).toMatchObject({
          executionId: record.id,
          detail: { taskId: input.taskId, before: 'outcome' },
        });

        expect(await store.requestTaskCancel(newTaskId(), cancel())).toBeUndefined();
        expect(await kinds('task_cancel')).toHaveLength(1);
      });

      it("setUpstreamTask records the upstream's task for the dispatch's holder only", async () => {
        const { input: claim, record } = await executionIn('dispatched');
        const events = () => [upstreamTaskEvent(subject(record), HANDLE, 'working')];
        const untouched = stable(await store.get(record.id));
        expect(untouched?.upstreamTask).toBeNull();

        expect(await store.setUpstreamTask(record.id, newToken(), HANDLE, events())).toBe(false);
        expect(await store.setUpstreamTask(newId(), claim.claimToken, HANDLE, events())).toBe(false);
        const waiting = await executionIn('accepted');
        expect(
          await store.setUpstreamTask(waiting.record.id, waiting.input.claimToken, HANDLE, events()),
        ).toBe(false);
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

      it("the sweep trims an execution's tasks with it, and leaves a dispatched one's, however old", async () => {
        const finished = await executionIn('completed');
        const finishedTasks = [
          await store.openTask(taskInput(finished.record.id)),
          await store.openTask(taskInput(finished.record.id, { actor: 'user:bob' })),
        ];
        await store.requestTaskCancel(finishedTasks[0]!.taskId);
        const live = await executionIn('dispatched');
        const liveTask = await store.openTask(taskInput(live.record.id));
        await store.setUpstreamTask(live.record.id, live.input.claimToken, HANDLE);
        await elapse(20);

        expect(await store.sweep({ retentionMs: 0, dryRun: true })).toMatchObject({ trimmed: 1 });
        expect(await store.getTask(finishedTasks[0]!.taskId)).toBeDefined();
        expect(await store.sweep({ retentionMs: 0 })).toEqual({ expired: [], trimmed: 1 });
        for (const task of finishedTasks) {
          expect(await store.getTask(task.taskId)).toBeUndefined();
          expect(await store.findTask(finished.record.id, task.actor)).toBeUndefined();
        }
        expect(await store.listTasks('user:bob', { limit: 10 })).toEqual([]);
        expect(await store.listTasks('user:alice', { limit: 10 })).toEqual([liveTask]);
        const kept = await store.getTask(liveTask.taskId);
        expect(kept?.record).toMatchObject({ state: 'dispatched', upstreamTask: HANDLE });
      });

      const ASKED = {
        confirm: { method: 'elicitation/create', params: { message: 'Deploy "r-7" — 東京 🧾?' } },
        region: { method: 'elicitation/create' },
      };

      it("a task's input is recorded by its holder only, and shows in watchTask while the execution is dispatched", async () => {
        const { input: claim, record } = await executionIn('dispatched');
        const waiting = await executionIn('awaiting_approval');
        const asked = [taskInputAskedEvent(subject(record), Object.keys(ASKED))];
        expect(await store.watchTask(record.id)).toEqual({ cancelRequestedAt: null, input: null });
        expect(await store.watchTask(newId())).toBeUndefined();
        // Not the holder, not dispatched: nothing written.
        expect(await store.setTaskInput(record.id, newToken(), ASKED, asked)).toBe(false);
        expect(await store.setTaskInput(waiting.record.id, waiting.input.claimToken, ASKED, asked)).toBe(
          false,
        );
        expect(await kinds('task_input')).toEqual([]);

        const before = await store.now();
        expect(await store.setTaskInput(record.id, claim.claimToken, ASKED, asked)).toBe(true);
        const watched = await store.watchTask(record.id);
        expect(watched?.input).toEqual({ requests: ASKED, answers: {}, askedAt: expect.any(Number) });
        expect(watched!.input!.askedAt).toBeGreaterThanOrEqual(before);
        expect(await kinds('task_input')).toEqual([
          expect.objectContaining({ executionId: record.id, detail: { asked: ['confirm', 'region'] } }),
        ]);

        // Cleared by the holder; and once the execution is no longer dispatched, none shows.
        expect(await store.setTaskInput(record.id, claim.claimToken, null)).toBe(true);
        expect((await store.watchTask(record.id))?.input).toBeNull();
        await store.setTaskInput(record.id, claim.claimToken, ASKED);
        await store.transition({
          id: record.id,
          from: ['dispatched'],
          to: 'completed',
          token: claim.claimToken,
          holder: null,
          outcome: AWKWARD_OUTCOME,
        });
        expect((await store.watchTask(record.id))?.input).toBeNull();
        expect(await store.answerTaskInput(record.id, { confirm: { action: 'accept' } })).toBeUndefined();
      });

      it('answers are taken for open keys only, each once, journaled only when one is taken', async () => {
        const { input: claim, record } = await executionIn('dispatched');
        const task = await store.openTask(taskInput(record.id));
        const answered = (keys: string[]) => [taskInputAnsweredEvent(subject(record), task.taskId, keys)];
        expect(
          await store.answerTaskInput(record.id, { confirm: { action: 'accept' } }, answered(['confirm'])),
        ).toBe(undefined);
        await store.setTaskInput(record.id, claim.claimToken, ASKED);

        const first = await store.answerTaskInput(
          record.id,
          { confirm: { action: 'accept' }, unasked: { action: 'accept' }, region: 'not an object' },
          answered(['confirm']),
        );
        expect(first?.answers).toEqual({ confirm: { action: 'accept' } });
        // Answered already: the first answer stands, and nothing is journaled.
        const again = await store.answerTaskInput(
          record.id,
          { confirm: { action: 'decline' } },
          answered(['confirm']),
        );
        expect(again?.answers).toEqual({ confirm: { action: 'accept' } });
        const last = await store.answerTaskInput(
          record.id,
          { region: { action: 'accept', content: { region: 'eu-west-1 "quoted" \\ 🧾' } } },
          answered(['region']),
        );
        expect(last?.answers).toEqual({
          confirm: { action: 'accept' },
          region: { action: 'accept', content: { region: 'eu-west-1 "quoted" \\ 🧾' } },
        });
        expect((await store.watchTask(record.id))?.input).toEqual(last);
        expect((await kinds('task_input')).map((e) => e.detail)).toEqual([
          { taskId: task.taskId, answered: ['confirm'] },
          { taskId: task.taskId, answered: ['region'] },
        ]);
      });

      it('concurrent answers to different keys all land, and of concurrent answers to one key exactly one', async () => {
        const { input: claim, record } = await executionIn('dispatched');
        const requests = Object.fromEntries(
          Array.from({ length: 8 }, (_, i) => [`k${i}`, { method: 'elicitation/create' }]),
        );
        await store.setTaskInput(record.id, claim.claimToken, requests);
        await Promise.all(
          Object.keys(requests).map((key, i) =>
            store.answerTaskInput(record.id, { [key]: { action: 'accept', n: i } }, [
              { kind: 'task_input', executionId: record.id, detail: { answered: [key] } },
            ]),
          ),
        );
        const all = (await store.watchTask(record.id))?.input;
        expect(Object.keys(all?.answers ?? {}).sort()).toEqual(Object.keys(requests).sort());
        expect(await kinds('task_input')).toHaveLength(8);

        const other = await executionIn('dispatched');
        await store.setTaskInput(other.record.id, other.input.claimToken, {
          only: { method: 'elicitation/create' },
        });
        const racers = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            store.answerTaskInput(other.record.id, { only: { action: 'accept', by: i } }, [
              { kind: 'task_input', executionId: other.record.id, detail: { answered: ['only'], by: i } },
            ]),
          ),
        );
        const kept = (await store.watchTask(other.record.id))?.input?.answers.only as { by: number };
        for (const seen of racers) expect(seen?.answers.only).toEqual(kept);
        const journaled = (await kinds('task_input')).filter((e) => e.executionId === other.record.id);
        expect(journaled.map((e) => e.detail.by)).toEqual([kept.by]);
      });

      it('requests added by the holder join the open input, keeping what was asked and answered; anyone else adds nothing', async () => {
        const { input: claim, record } = await executionIn('dispatched');
        const later = { third: { method: 'sampling/createMessage', params: { maxTokens: 5 } } };
        expect(await store.addTaskInput(record.id, newToken(), ASKED)).toBe(false);
        expect((await store.watchTask(record.id))?.input).toBeNull();
        // None open: added, it opens it.
        expect(
          await store.addTaskInput(record.id, claim.claimToken, ASKED, [
            taskInputAskedEvent(subject(record), Object.keys(ASKED)),
          ]),
        ).toBe(true);
        const opened = (await store.watchTask(record.id))?.input;
        expect(opened).toEqual({ requests: ASKED, answers: {}, askedAt: expect.any(Number) });
        await store.answerTaskInput(record.id, { confirm: { action: 'accept' } });
        // A key asked already keeps its request and its answer; a new one joins.
        expect(
          await store.addTaskInput(record.id, claim.claimToken, {
            ...later,
            confirm: { method: 'elicitation/create', params: { message: 'replaced?' } },
          }),
        ).toBe(true);
        expect((await store.watchTask(record.id))?.input).toEqual({
          requests: { ...ASKED, ...later },
          answers: { confirm: { action: 'accept' } },
          askedAt: opened?.askedAt,
        });
        expect((await kinds('task_input')).filter((e) => e.executionId === record.id)).toHaveLength(1);
        // Concurrent answers and additions: every answer stays taken, every request asked.
        const more = Array.from({ length: 6 }, (_, i) => `more${i}`);
        await Promise.all([
          ...more.map((key) =>
            store.addTaskInput(record.id, claim.claimToken, { [key]: { method: 'elicitation/create' } }),
          ),
          store.answerTaskInput(record.id, { region: { action: 'decline' } }),
          store.answerTaskInput(record.id, { third: { role: 'assistant' } }),
        ]);
        const all = (await store.watchTask(record.id))?.input;
        expect(Object.keys(all?.requests ?? {}).sort()).toEqual(
          ['confirm', 'region', 'third', ...more].sort(),
        );
        expect(all?.answers).toEqual({
          confirm: { action: 'accept' },
          region: { action: 'decline' },
          third: { role: 'assistant' },
        });
        await store.transition({
          id: record.id,
          from: ['dispatched'],
          to: 'unknown',
          token: claim.claimToken,
        });
        expect(await store.addTaskInput(record.id, claim.claimToken, later)).toBe(false);
      });

      it("watchTask reads the first cancel of any of the execution's tasks", async () => {
        const { record } = await executionIn('dispatched');
        const alice = await store.openTask(taskInput(record.id));
        const bob = await store.openTask(taskInput(record.id, { actor: 'user:bob' }));
        expect((await store.watchTask(record.id))?.cancelRequestedAt).toBeNull();
        await store.requestTaskCancel(bob.taskId);
        const first = (await store.watchTask(record.id))?.cancelRequestedAt;
        expect(first).toBe((await store.getTask(bob.taskId))?.task.cancelRequestedAt);
        await elapse(5);
        await store.requestTaskCancel(alice.taskId);
        expect((await store.watchTask(record.id))?.cancelRequestedAt).toBe(first);
      });
    });

    describe('clock', () => {
      it('now() moves forward with time', async () => {
        const a = await store.now();
        await elapse(30);
        const b = await store.now();
        expect(b - a).toBeGreaterThanOrEqual(25);
      });
    });
  });
}
