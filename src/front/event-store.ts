import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * SSE resumability (`Last-Event-ID`): the last events of each stream, in
 * memory, bounded. A client whose stream broke re-attaches and gets what it
 * missed instead of re-sending the request.
 */
export class BoundedEventStore implements EventStore {
  readonly #events = new Map<string, { streamId: string; message: JSONRPCMessage }>();
  #counter = 0;

  constructor(readonly maxEvents = 10_000) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}_${(++this.#counter).toString(36).padStart(10, '0')}`;
    this.#events.set(eventId, { streamId, message });
    // Map iteration is insertion order: the oldest event goes first.
    while (this.#events.size > this.maxEvents)
      this.#events.delete(this.#events.keys().next().value as string);
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const last = this.#events.get(lastEventId);
    if (!last) return '';
    let after = false;
    for (const [eventId, event] of this.#events) {
      if (eventId === lastEventId) {
        after = true;
        continue;
      }
      if (after && event.streamId === last.streamId) await send(eventId, event.message);
    }
    return last.streamId;
  }
}
