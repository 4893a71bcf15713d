import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { BoundedEventStore } from './event-store.js';

const message = (n: number, pad = 0): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id: n, result: { n, pad: 'x'.repeat(pad) } }) as JSONRPCMessage;

async function replayed(store: BoundedEventStore, after: string): Promise<number[]> {
  const seen: number[] = [];
  await store.replayEventsAfter(after, {
    send: async (_id, m) => {
      seen.push((m as { id: number }).id);
    },
  });
  return seen;
}

describe('BoundedEventStore (one per session)', () => {
  it('replays the events of the same stream after the given one', async () => {
    const store = new BoundedEventStore();
    const first = await store.storeEvent('s1', message(1));
    await store.storeEvent('s2', message(2));
    await store.storeEvent('s1', message(3));
    expect(await replayed(store, first)).toEqual([3]);
  });

  it('an event id of another store (another session) is unknown here', async () => {
    const mine = new BoundedEventStore();
    const theirs = new BoundedEventStore();
    const their = await theirs.storeEvent('s1', message(1));
    await theirs.storeEvent('s1', message(2));
    expect(await mine.getStreamIdForEventId(their)).toBeUndefined();
    expect(await replayed(mine, their)).toEqual([]);
  });

  it('is bounded by count and by bytes, oldest first', async () => {
    const byCount = new BoundedEventStore(2);
    for (const n of [1, 2, 3]) await byCount.storeEvent('s', message(n));
    expect(byCount.size).toBe(2);
    const byBytes = new BoundedEventStore(100, 2_500);
    for (const n of [1, 2, 3]) await byBytes.storeEvent('s', message(n, 1_000));
    expect(byBytes.size).toBe(2);
  });
});
