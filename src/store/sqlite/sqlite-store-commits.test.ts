import { unlinkSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';
import { StoreRefusedError, StoreUnavailableError } from '../../errors.js';
import type { ClaimInput } from '../types.js';
import { SqliteStore } from './sqlite-store.js';

describe('SqliteStore', () => {
  const files = useSqliteFiles();
  const { open, raw, opened } = files;

  describe('group commit: writes asked for in one turn share one transaction', () => {
    /** Executions visible to another connection: what is committed. */
    function committedIds(): string[] {
      const reader = raw({ readonly: true });
      const ids = reader.prepare('SELECT id FROM executions ORDER BY id').pluck().all() as string[];
      reader.close();
      return ids;
    }

    it('settles each claim only after the commit that holds all of them', async () => {
      const store = await open();
      const inputs = Array.from({ length: 16 }, () => claimInput());
      const claims = inputs.map((input) =>
        store.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] }),
      );
      // Queued, not yet written: nothing is visible until the batch commits.
      expect(committedIds()).toEqual([]);
      const first = await claims[0];
      // When the first caller hears "won", every claim of the batch is already committed with it.
      expect(first?.won).toBe(true);
      expect(committedIds()).toEqual(inputs.map((input) => input.id).sort());
      expect((await Promise.all(claims)).every((claim) => claim.won)).toBe(true);
      const journal = await store.readJournal();
      expect(journal.map((entry) => entry.executionId)).toEqual(inputs.map((input) => input.id));
      expect(chainProblems(journal)).toEqual([]);
    });

    it('keeps the claim semantics inside a batch: one winner per fingerprint, the other sees it', async () => {
      const store = await open();
      const fingerprint = newFingerprint();
      const [a, b] = await Promise.all([
        store.claim(claimInput({ fingerprint })),
        store.claim(claimInput({ fingerprint })),
      ]);
      expect(a?.won).toBe(true);
      expect(b?.won).toBe(false);
      expect(b?.record?.id).toBe(a?.record?.id);
    });

    it('a write that fails alone is undone alone; the rest of its batch commits', async () => {
      const store = await open();
      const taken = claimInput();
      await store.claim(taken);
      const good = [claimInput(), claimInput(), claimInput()];
      const results = await Promise.allSettled([
        store.claim(good[0]!, { events: [{ kind: 'accepted', executionId: good[0]!.id }] }),
        // Reuses an id: a bug, not "unavailable"; its journal entry goes with it.
        store.claim(claimInput({ id: taken.id }), { events: [{ kind: 'accepted', executionId: taken.id }] }),
        store.claim(good[1]!, { events: [{ kind: 'accepted', executionId: good[1]!.id }] }),
        store.claim(good[2]!, { events: [{ kind: 'accepted', executionId: good[2]!.id }] }),
      ]);
      expect(results.map((result) => result.status)).toEqual([
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
      ]);
      const failure = (results[1] as PromiseRejectedResult).reason;
      expect(failure).not.toBeInstanceOf(StoreUnavailableError);
      expect(failure.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
      expect(committedIds()).toEqual([taken.id, ...good.map((input) => input.id)].sort());
      const journal = await store.readJournal();
      expect(journal.map((entry) => entry.executionId)).toEqual(good.map((input) => input.id));
      expect(chainProblems(journal)).toEqual([]);
    });

    it('a batch that cannot commit fails every write closed: none recorded, each told "not executed"', async () => {
      const store = await open({ busyTimeoutMs: 50 });
      await store.claim(claimInput());
      const before = committedIds();
      const other = raw();
      other.exec('BEGIN IMMEDIATE');
      const results = await Promise.allSettled(Array.from({ length: 5 }, () => store.claim(claimInput())));
      other.exec('COMMIT');
      for (const result of results) {
        expect(result.status).toBe('rejected');
        const error = (result as PromiseRejectedResult).reason;
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(error.code).toBe('IDEM_NOT_EXECUTED');
      }
      expect(committedIds()).toEqual(before);
    });

    it('when the disk fills mid-batch, every promise settles and no claim answered "won" is missing', async () => {
      await (await SqliteStore.open({ path: files.path })).close();
      const db = raw();
      opened.pop();
      const store = new SqliteStore(db);
      opened.push(store);
      db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 4}`);
      const big = 'x'.repeat(3000);
      const inputs = Array.from({ length: 12 }, () => claimInput({ argumentsPreview: big }));
      const results = await Promise.allSettled(inputs.map((input) => store.claim(input)));
      const won = inputs.filter((_, i) => results[i]?.status === 'fulfilled').map((input) => input.id);
      for (const result of results) {
        if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(StoreUnavailableError);
      }
      expect(results.some((result) => result.status === 'rejected')).toBe(true);
      expect(committedIds()).toEqual(won.sort());
    });

    it('close() commits what is still queued: every caller is answered, nothing is lost', async () => {
      const store = await open();
      const inputs = [claimInput(), claimInput()];
      const claims = inputs.map((input) => store.claim(input));
      await store.close();
      expect((await Promise.all(claims)).map((claim) => claim.won)).toEqual([true, true]);
      expect(committedIds()).toEqual(inputs.map((input) => input.id).sort());
    });
  });

  describe('durability per write (src/store/durability.ts): a claim is synced, its outcome rides on the next sync', () => {
    const outcome = { result: { content: [{ type: 'text' as const, text: 'done' }] } };

    async function claimed(store: SqliteStore) {
      const input = claimInput();
      await store.claim(input);
      return input;
    }

    /** The dispatch's holder records its own outcome: the write durability.ts lets ride on the next sync. */
    const holderOutcome = (store: SqliteStore, input: ClaimInput) =>
      store.transition({
        id: input.id,
        from: ['accepted'],
        to: 'completed',
        token: input.claimToken,
        outcome,
      });

    it('the claim waits for a sync of the WAL; the holder recording its outcome, a delivery and events do not', async () => {
      const store = await open();
      const input = await claimed(store);
      expect(store.commitStats()).toMatchObject({ commits: 1, synced: 1 });
      await holderOutcome(store, input);
      await store.markDelivered(input.id, [{ kind: 'delivered', executionId: input.id }]);
      await store.appendEvents([{ kind: 'receipt_hit', executionId: input.id }]);
      expect(store.commitStats()).toMatchObject({ commits: 4, synced: 1 });
      expect((await store.get(input.id))?.state).toBe('completed');
    });

    it('every write that lets something go ahead is synced: a dispatch, an operator resolution, and a batch holding a claim', async () => {
      const store = await open();
      const input = await claimed(store);
      await store.transition({ id: input.id, from: ['accepted'], to: 'dispatched', token: input.claimToken });
      // No token: an operator (or the sweeper, or a probe) decided it, not the dispatch's holder.
      await store.transition({ id: input.id, from: ['dispatched'], to: 'failed', outcome });
      await Promise.all([
        store.claim(claimInput()),
        store.transition({ id: input.id, from: ['failed'], to: 'failed', token: 'none' }),
      ]);
      expect(store.commitStats()).toMatchObject({ commits: 4, synced: 4 });
    });

    it('an outcome no sync follows is synced by the timer within the bound', async () => {
      const store = await open();
      const input = await claimed(store);
      await holderOutcome(store, input);
      await vi.waitFor(() => expect(store.commitStats().timerSyncs).toBe(1), { timeout: 5_000 });
    });

    it('a WAL that cannot be synced refuses the store: the claim is not answered "won", and nothing later is written', async () => {
      const store = await open();
      // The store's own writes (the migrations) made the -wal file; its sync opens it at the
      // first sync. Unlinked now, SQLite goes on writing to its open descriptor, and the
      // sync cannot reach the file: the disk's answer is a failure, as a failing disk's would be.
      unlinkSync(`${files.path}-wal`);
      const refused = await store.claim(claimInput()).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StoreRefusedError);
      expect(refused).toMatchObject({ reason: 'sync_failed' });
      expect((refused as Error).message).toContain('-wal');
      // As after any failed fsync: what the kernel could not write may be gone, so every later
      // call fails closed, a read included.
      await expect(store.claim(claimInput())).rejects.toMatchObject({ reason: 'sync_failed' });
      await expect(store.get('exe_none')).rejects.toBeInstanceOf(StoreRefusedError);
    });

    it('with synchronous "normal", nothing is synced', async () => {
      const store = await open({ synchronous: 'normal' });
      const input = await claimed(store);
      await store.transition({ id: input.id, from: ['accepted'], to: 'completed', token: input.claimToken });
      await store.sweep({ retentionMs: 60_000 });
      expect(store.commitStats()).toMatchObject({ commits: 2, synced: 0, timerSyncs: 0 });
      expect(store.synchronous()).toBe('normal');
    });
  });
});
