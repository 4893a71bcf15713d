import { describe, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';

/**
 * A trim reads the rowid range of rows created before its cutoff (sql.ts trimBoundary), found by
 * a binary search on created_at: what a clock that steps back does to it, and that every row a
 * trim may delete is deleted by some sweep.
 */
describe('SqliteStore trims by rowid range', () => {
  const files = useSqliteFiles();

  async function finishedAt(
    store: Awaited<ReturnType<typeof files.open>>,
    clock: { now: number },
    at: number,
  ) {
    clock.now = at;
    const input = claimInput({ state: 'dispatched', dispatchTimeoutMs: 60_000 });
    await store.claim(input);
    await store.transition({ id: input.id, from: ['dispatched'], to: 'completed', token: input.claimToken });
    return input.id;
  }

  it('deletes exactly the finished rows at or before the cutoff', async () => {
    const clock = { now: 0 };
    const store = await files.open({ clock: () => clock.now });
    const ids: string[] = [];
    for (let at = 1_000; at <= 20_000; at += 1_000) ids.push(await finishedAt(store, clock, at));
    clock.now = 30_000;
    // Retention 20 s: the cutoff is 10 000, so the rows finished at 1 000 … 10 000 go.
    const swept = await store.sweep({ retentionMs: 20_000 });
    expect(swept.trimmed).toBe(10);
    expect((await store.list({ limit: 100 })).map((r) => r.id).sort()).toEqual(ids.slice(10));
  });

  it('a clock that stepped back moves the boundary earlier: a later sweep trims what the first left', async () => {
    const clock = { now: 0 };
    const store = await files.open({ clock: () => clock.now });
    const early = await finishedAt(store, clock, 5_000);
    // Inserted after, with an earlier clock reading: created_at no longer grows with the rowid.
    const stepped = await finishedAt(store, clock, 9_000);
    const back = await finishedAt(store, clock, 2_000);
    clock.now = 10_000;
    const first = await store.sweep({ retentionMs: 3_000 });
    // Cutoff 7 000: `early` and `back` may go; nothing past the cutoff ever does.
    expect(await store.get(stepped)).toBeDefined();
    expect(await store.get(early)).toBeUndefined();
    clock.now = 20_000;
    const second = await store.sweep({ retentionMs: 3_000 });
    expect(first.trimmed + second.trimmed).toBe(3);
    for (const id of [early, stepped, back]) expect(await store.get(id)).toBeUndefined();
  });
});
