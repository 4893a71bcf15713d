import { randomBytes } from 'node:crypto';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { PATIENTLY } from '../../test/support/wait.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { ReceiptBook } from './receipt-book.js';
import { type ReceiptAnswer, ReceiptTransport } from './receipt-transport.js';
import { LAZY_DIGEST_MAX_CHARS } from './request-digest.js';

const call = (id: number, key = 'k'): JSONRPCMessage => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'act', arguments: { key } },
});

/** A client connected to a receipt-wrapped server end that records what reaches the server (and never answers by itself). */
async function connected(book = new ReceiptBook(), fingerprinter = new Fingerprinter(randomBytes(32))) {
  const [client, server] = InMemoryTransport.createLinkedPair();
  const answered: ReceiptAnswer[] = [];
  const receipts = new ReceiptTransport(server, {
    book,
    fingerprinter,
    actorOf: () => 'alice',
    onAnswered: (how) => answered.push(how),
  });
  const arrived: JSONRPCMessage[] = [];
  const replies: JSONRPCMessage[] = [];
  receipts.onmessage = (message) => arrived.push(message);
  client.onmessage = (message) => replies.push(message);
  await receipts.start();
  await client.start();
  const calls = (id: number) => arrived.filter((m) => 'id' in m && m.id === id && 'method' in m).length;
  return { client, receipts, book, arrived, replies, calls, answered };
}

describe('ReceiptTransport: a receipt settles on every path', () => {
  it('says each time it answers a request itself (resend, id reused, full), and not when the server gets it', async () => {
    const { client, calls, replies, answered } = await connected(new ReceiptBook({ maxReceipts: 2 }));
    await client.send(call(1, 'a'));
    await vi.waitFor(() => expect(calls(1) === 1, 'the call to arrive').toBe(true), PATIENTLY);
    await client.send(call(1, 'a'));
    await client.send(call(1, 'other'));
    await client.send(call(2, 'b'));
    await vi.waitFor(() => expect(calls(2) === 1, 'the second call to arrive').toBe(true), PATIENTLY);
    await client.send(call(3, 'c'));
    await vi.waitFor(() => expect(replies.length === 2, 'the refusals').toBe(true), PATIENTLY);
    expect(replies.map((r) => JSON.stringify(r))).toEqual([
      expect.stringContaining('MCP_REQUEST_ID_REUSED'),
      expect.stringContaining('IDEM_RECEIPTS_FULL'),
    ]);
    expect(answered).toEqual(['resend', 'id_reused', 'full']);
    expect(calls(1)).toBe(1);
    expect(calls(3)).toBe(0);
  });

  it('a cancelled request’s receipt is released: the resend of its id reaches the server again instead of waiting forever', async () => {
    const { client, calls } = await connected();
    await client.send(call(1));
    await vi.waitFor(() => expect(calls(1) === 1, 'the call to arrive').toBe(true), PATIENTLY);
    await client.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'changed my mind' },
    });
    await client.send(call(1));
    // The server (the execution layer behind it) answers the resend; nothing waits on a reply that cannot come.
    await vi.waitFor(() => expect(calls(1) === 2, 'the resend to arrive').toBe(true), PATIENTLY);
  });

  it('after a cancellation the id is still taken for other content (MCP_REQUEST_ID_REUSED)', async () => {
    const { client, calls, replies } = await connected();
    await client.send(call(3, 'first'));
    await vi.waitFor(() => expect(calls(3) === 1, 'the call to arrive').toBe(true), PATIENTLY);
    await client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } });
    await client.send(call(3, 'other'));
    await vi.waitFor(() => expect(replies.length === 1, 'the refusal').toBe(true), PATIENTLY);
    expect(replies[0]).toMatchObject({ id: 3, error: { data: { code: 'MCP_REQUEST_ID_REUSED' } } });
    expect(calls(3)).toBe(1);
  });

  it('the transport closes: running receipts are released and settled ones dropped', async () => {
    const book = new ReceiptBook();
    const { client, receipts, calls } = await connected(book);
    await client.send(call(1, 'running'));
    await client.send(call(2, 'done'));
    await vi.waitFor(
      () => expect(calls(1) === 1 && calls(2) === 1, 'both calls to arrive').toBe(true),
      PATIENTLY,
    );
    await receipts.send({ jsonrpc: '2.0', id: 2, result: { content: [] } });
    expect(book.size).toBe(2);
    await receipts.close();
    expect(book.size).toBe(0);
  });

  it('admit, then the transport refuses the request (abandon): no receipt left, the resend is admitted as new', async () => {
    const book = new ReceiptBook();
    const { receipts } = await connected(book);
    expect(await receipts.admit(call(7))).toEqual({ kind: 'forward' });
    expect(book.size).toBe(1);
    // A resend while the first is undecided waits; the refusal wakes it and it is admitted in its place.
    const resend = receipts.admit(call(7));
    receipts.abandon(7);
    expect(await resend).toEqual({ kind: 'forward' });
    expect(book.size).toBe(1);
  });
});

describe('ReceiptTransport: the request digest', () => {
  class CountingFingerprinter extends Fingerprinter {
    digests = 0;
    override digest(domain: string, canonicalText: string): string {
      this.digests++;
      return super.digest(domain, canonicalText);
    }
  }

  it('a small request is digested only when the same id comes again, from the copy taken on arrival', async () => {
    const fingerprinter = new CountingFingerprinter(randomBytes(32));
    const { client, receipts, arrived, replies, calls } = await connected(undefined, fingerprinter);
    await client.send(call(1));
    await vi.waitFor(() => expect(calls(1) === 1, 'the call to arrive').toBe(true), PATIENTLY);
    expect(fingerprinter.digests).toBe(0);
    // What the server was handed is changed after the fact (a handler editing its arguments):
    // the receipt still compares the resend with the request as it arrived.
    const first = arrived[0] as unknown as { params: { arguments: { key: string } } };
    first.params.arguments.key = 'edited by the handler';
    await receipts.send({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    await vi.waitFor(() => expect(replies.length === 1, 'the answer').toBe(true), PATIENTLY);
    await client.send(call(1));
    await vi.waitFor(() => expect(replies.length === 2, 'the resend answered').toBe(true), PATIENTLY);
    // The first answer, not MCP_REQUEST_ID_REUSED: the resend matched the request as it arrived.
    expect(replies[1]).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    expect(calls(1)).toBe(1);
    expect(fingerprinter.digests).toBe(2);
  });

  it('a large request is digested on arrival: its receipt does not hold what was sent', async () => {
    const fingerprinter = new CountingFingerprinter(randomBytes(32));
    const { client, calls } = await connected(undefined, fingerprinter);
    await client.send(call(2, 'x'.repeat(LAZY_DIGEST_MAX_CHARS + 1)));
    await vi.waitFor(() => expect(calls(2) === 1, 'the call to arrive').toBe(true), PATIENTLY);
    expect(fingerprinter.digests).toBe(1);
  });
});
