import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Default bounds of one session's replay buffer. */
export const DEFAULT_MAX_EVENTS_PER_SESSION = 1_000;
export const DEFAULT_MAX_EVENT_BYTES_PER_SESSION = 16 * 1024 * 1024;

/**
 * SSE resumability (`Last-Event-ID`) for ONE session: the last events of its
 * streams, in memory, bounded by count and by bytes. A client whose stream
 * broke re-attaches and gets what it missed instead of re-sending the request.
 *
 * One store per session, never shared: an event id from another session is
 * simply unknown here, so a client can only ever replay its own session's
 * results (the front checks that the session is the caller's).
 */
export class BoundedEventStore implements EventStore {
  readonly #events = new Map<string, { streamId: string; message: JSONRPCMessage; bytes: number }>();
  #counter = 0;
  #bytes = 0;

  constructor(
    readonly maxEvents = DEFAULT_MAX_EVENTS_PER_SESSION,
    readonly maxBytes = DEFAULT_MAX_EVENT_BYTES_PER_SESSION,
  ) {}

  get size(): number {
    return this.#events.size;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}_${(++this.#counter).toString(36).padStart(10, '0')}`;
    const bytes = Buffer.byteLength(JSON.stringify(message));
    this.#events.set(eventId, { streamId, message, bytes });
    this.#bytes += bytes;
    // Map iteration is insertion order: the oldest event goes first.
    while (this.#events.size > this.maxEvents || (this.#bytes > this.maxBytes && this.#events.size > 0)) {
      const [oldest, event] = this.#events.entries().next().value as [string, { bytes: number }];
      this.#events.delete(oldest);
      this.#bytes -= event.bytes;
    }
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
