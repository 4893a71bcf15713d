import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ReceiptBook } from './receipt-book.js';

/** A full garbage collection (V8's `gc`, enabled here rather than by a flag). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const reply = (n: number) => ({ jsonrpc: '2.0' as const, id: n, result: { n } });

describe('ReceiptBook', () => {
  it('stores the reply promise before the work: a duplicate waits on the same promise', async () => {
    const book = new ReceiptBook();
    const first = book.begin('k', 'fp', true);
    expect(first.kind).toBe('new');
    const dup = book.begin('k', 'fp', true);
    expect(dup.kind).toBe('duplicate');
    if (first.kind !== 'new' || dup.kind !== 'duplicate') return;
    let settled = false;
    void dup.reply.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    first.settle(reply(1));
    expect(await dup.reply).toEqual(reply(1));
  });

  it('same key, different fingerprint: rejected inside a session, a new request without one', () => {
    const book = new ReceiptBook();
    book.begin('k', 'fp1', true);
    expect(book.begin('k', 'fp2', true).kind).toBe('id_reused');
    const sessionless = new ReceiptBook();
    sessionless.begin('k', 'fp1', false);
    const again = sessionless.begin('k', 'fp2', false);
    expect(again.kind).toBe('new');
    expect(again.kind === 'new' && again.idReused).toBe(true);
  });

  it('computes a digest only when a second request with the same key must be compared, once each', () => {
    const book = new ReceiptBook();
    const computed: string[] = [];
    const digestOf = (name: string, value: string) => () => {
      computed.push(name);
      return value;
    };
    expect(book.begin('a', digestOf('a1', 'fp'), true).kind).toBe('new');
    expect(book.begin('b', digestOf('b1', 'fp'), true).kind).toBe('new');
    expect(computed).toEqual([]);
    expect(book.begin('a', digestOf('a2', 'fp'), true).kind).toBe('duplicate');
    expect(book.begin('a', digestOf('a3', 'other'), true).kind).toBe('id_reused');
    // a1 was computed once and kept; b1 was never needed.
    expect(computed).toEqual(['a1', 'a2', 'a3']);
  });

  it('a digest that cannot be computed: the new request takes no receipt; a held one counts as absent', () => {
    const book = new ReceiptBook();
    const refuse = () => {
      throw new Error('too large');
    };
    book.begin('k', 'fp', true);
    expect(() => book.begin('k', refuse, true)).toThrow('too large');
    expect(book.begin('k', 'fp', true).kind).toBe('duplicate');

    const first = book.begin('j', refuse, true);
    expect(first.kind).toBe('new');
    const second = book.begin('j', 'fp', true);
    expect(second.kind).toBe('new');
    expect(second.kind === 'new' && second.idReused).toBe(false);
    expect(book.size).toBe(2);
  });

  it('errors are retained results: a resend gets the error, not a second run', async () => {
    const book = new ReceiptBook();
    const first = book.begin('k', 'fp', true);
    if (first.kind !== 'new') throw new Error('expected new');
    const error = { jsonrpc: '2.0' as const, id: 1, error: { code: -32603, message: 'boom' } };
    first.settle(error);
    const dup = book.begin('k', 'fp', true);
    expect(dup.kind).toBe('duplicate');
    if (dup.kind === 'duplicate') expect(await dup.reply).toEqual(error);
  });

  it('at the bound refuses new ids, never evicting unfinished or retained receipts', () => {
    let now = 0;
    const book = new ReceiptBook({ maxReceipts: 3, retentionMs: 1000, clock: () => now });
    const a = book.begin('a', 'fp', true);
    book.begin('b', 'fp', true);
    book.begin('c', 'fp', true);
    expect(book.begin('d', 'fp', true).kind).toBe('full');
    // Finished but still inside retention: still not evicted.
    if (a.kind === 'new') a.settle(reply(1));
    now = 999;
    expect(book.begin('d', 'fp', true).kind).toBe('full');
    expect(book.begin('a', 'fp', true).kind).toBe('duplicate');
    // Past retention: that one may go, and only that one.
    now = 1000;
    expect(book.begin('d', 'fp', true).kind).toBe('new');
    expect(book.size).toBe(3);
    expect(book.begin('b', 'fp', true).kind).toBe('duplicate');
  });

  it('at the bound each new id evicts only the receipt settled first, in settle order, not begin order', () => {
    let now = 0;
    const book = new ReceiptBook({ maxReceipts: 4, retentionMs: 100, clock: () => now });
    const begun = Object.fromEntries(
      ['a', 'b', 'c', 'd'].map((key) => [key, book.begin(key, `fp-${key}`, true)]),
    );
    const settleAt = (key: string, at: number) => {
      now = at;
      const decision = begun[key];
      if (decision?.kind !== 'new') throw new Error(`expected ${key} new`);
      decision.settle(reply(at));
    };
    settleAt('c', 1);
    settleAt('a', 2);
    settleAt('d', 3);
    // b is still running: it is never evicted, however old.
    const held = (...keys: string[]) =>
      keys.every((key) => book.begin(key, `fp-${key}`, true).kind === 'duplicate');
    now = 101; // c is past retention, a (102) not yet
    expect(book.begin('e', 'fp-e', true).kind).toBe('new');
    expect(book.size).toBe(4);
    expect(held('a', 'b', 'd', 'e')).toBe(true);
    now = 102; // a is next
    expect(book.begin('f', 'fp-f', true).kind).toBe('new');
    expect(held('b', 'd', 'e', 'f')).toBe(true);
    // d is kept until 103: nothing else may go, so a new id is refused and nothing is evicted.
    expect(book.begin('g', 'fp-g', true).kind).toBe('full');
    expect(held('b', 'd', 'e', 'f')).toBe(true);
    now = 103;
    expect(book.begin('g', 'fp-g', true).kind).toBe('new');
    expect(held('b', 'e', 'f', 'g')).toBe(true);
  });

  it('a trimmed receipt is let go: its reply can be collected, well before the queue is compacted', async () => {
    let now = 0;
    const book = new ReceiptBook({ retentionMs: 10, clock: () => now });
    // Settled in a function of its own: nothing of them stays on this (suspended) frame.
    const settleThree = () =>
      [0, 1, 2].map((i) => {
        const decision = book.begin(`k${i}`, `fp${i}`, true);
        if (decision.kind !== 'new') throw new Error('expected new');
        const answer = reply(i);
        decision.settle(answer);
        return new WeakRef(answer);
      });
    const replies = settleThree();
    now = 11;
    expect(book.trim()).toBe(3);
    // A WeakRef's target is kept until the job that made it ends: collect on a later turn.
    await nextTurn();
    collectGarbage();
    expect(replies.map((ref) => ref.deref())).toEqual([undefined, undefined, undefined]);
  });

  it('a settled receipt past retention no longer answers: the id starts fresh', () => {
    let now = 0;
    const book = new ReceiptBook({ retentionMs: 10, clock: () => now });
    const a = book.begin('a', 'fp1', true);
    if (a.kind === 'new') a.settle(reply(1));
    now = 11;
    expect(book.begin('a', 'fp2', true).kind).toBe('new');
  });

  it('the bound is per actor too: one actor at its limit does not lock the others out', () => {
    const book = new ReceiptBook({ maxReceipts: 100, maxReceiptsPerActor: 2 });
    expect(book.begin('m1', 'fp', true, { owner: 'mallory' }).kind).toBe('new');
    expect(book.begin('m2', 'fp', true, { owner: 'mallory' }).kind).toBe('new');
    expect(book.begin('m3', 'fp', true, { owner: 'mallory' }).kind).toBe('full');
    expect(book.begin('a1', 'fp', true, { owner: 'alice' }).kind).toBe('new');
    expect(book.sizeOf('mallory')).toBe(2);
    expect(book.sizeOf('alice')).toBe(1);
  });

  it('a released unanswered receipt wakes its waiters with null and frees the id and the actor’s slot', async () => {
    const book = new ReceiptBook({ maxReceiptsPerActor: 1 });
    const first = book.begin('k', 'fp', true, { owner: 'alice' });
    const dup = book.begin('k', 'fp', true, { owner: 'alice' });
    if (first.kind !== 'new' || dup.kind !== 'duplicate') throw new Error('expected new, then duplicate');
    first.release();
    expect(await dup.reply).toBeNull();
    expect(book.size).toBe(0);
    expect(book.sizeOf('alice')).toBe(0);
    // The id is free again: a resend now runs as a new request.
    const again = book.begin('k', 'fp', true, { owner: 'alice' });
    expect(again.kind).toBe('new');
    // A settle after the release changes nothing for the new receipt.
    first.settle(reply(1));
    expect(book.begin('k', 'fp', true, { owner: 'alice' }).kind).toBe('duplicate');
  });

  it('releasing a settled receipt drops it (a closed session’s receipts can never match again)', async () => {
    const book = new ReceiptBook();
    const first = book.begin('k', 'fp', true, { owner: 'alice' });
    if (first.kind !== 'new') throw new Error('expected new');
    first.settle(reply(1));
    first.release();
    expect(book.size).toBe(0);
  });

  it('trimming drops expired receipts in settle order and keeps running ones', () => {
    let now = 0;
    const book = new ReceiptBook({ retentionMs: 10, clock: () => now });
    const done = ['a', 'b', 'c'].map((k) => book.begin(k, 'fp', true, { owner: 'x' }));
    book.begin('running', 'fp', true, { owner: 'x' });
    for (const d of done) if (d.kind === 'new') d.settle(reply(1));
    now = 10;
    expect(book.trim()).toBe(3);
    expect(book.size).toBe(1);
    expect(book.sizeOf('x')).toBe(1);
  });

  it('a group’s session ends: its running receipts wake their waiters, its settled ones go (or stay, if asked)', async () => {
    const book = new ReceiptBook();
    const running = book.begin('r', 'fp', true, { group: 's1' });
    const done = book.begin('d', 'fp', true, { group: 's1' });
    const other = book.begin('o', 'fp', true, { group: 's2' });
    const waiting = book.begin('r', 'fp', true);
    if (running.kind !== 'new' || done.kind !== 'new' || other.kind !== 'new' || waiting.kind !== 'duplicate')
      throw new Error('unexpected decisions');
    done.settle(reply(1));
    book.releaseGroup('s1');
    expect(await waiting.reply).toBeNull();
    expect(book.size).toBe(1);
    const kept = book.begin('k', 'fp', false, { group: 's3' });
    const dropped = book.begin('u', 'fp', false, { group: 's3' });
    if (kept.kind !== 'new' || dropped.kind !== 'new') throw new Error('expected new');
    kept.settle(reply(2));
    book.releaseGroup('s3', true);
    expect(book.begin('k', 'fp', false).kind).toBe('duplicate');
    expect(book.begin('u', 'fp', false).kind).toBe('new');
  });
});
