/**
 * An in-memory event store for the fixture's sessionful Streamable HTTP
 * transports (priming events, resumability with Last-Event-ID).
 */
import { randomUUID } from 'node:crypto';
import type { EventId, EventStore, JSONRPCMessage, StreamId } from '@modelcontextprotocol/server';

/** Keeps every event of a session so a client can resume a stream after Last-Event-ID. */
export class MemoryEventStore implements EventStore {
  readonly #events = new Map<EventId, { streamId: StreamId; message: JSONRPCMessage }>();

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const eventId = `${streamId}_${randomUUID()}`;
    this.#events.set(eventId, { streamId, message });
    return eventId;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const streamId = this.#events.get(lastEventId)?.streamId;
    if (streamId === undefined) return '';
    let after = false;
    // A Map iterates in insertion order: the events after lastEventId, in order.
    for (const [eventId, event] of this.#events) {
      if (eventId === lastEventId) after = true;
      else if (after && event.streamId === streamId) await send(eventId, event.message);
    }
    return streamId;
  }
}
