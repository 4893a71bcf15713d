import { describe, expect, it } from 'vitest';
import { ReceiptBook } from './receipt-book.js';

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

  it('a settled receipt past retention no longer answers: the id starts fresh', () => {
    let now = 0;
    const book = new ReceiptBook({ retentionMs: 10, clock: () => now });
    const a = book.begin('a', 'fp1', true);
    if (a.kind === 'new') a.settle(reply(1));
    now = 11;
    expect(book.begin('a', 'fp2', true).kind).toBe('new');
  });
});
