import type { Caller } from './call.js';

/** Sessions this process remembers the order of calls for; the least recently used is forgotten first. */
const MAX_SESSIONS = 2_048;
/** Answered executions remembered per session; the oldest answer is forgotten first. */
const MAX_ANSWERS_PER_SESSION = 256;

/**
 * What one call's session has seen, as this process saw it: what tells a retry of an answered
 * call from a deliberate repeat (docs/contracts.md, "Retry, repeat, new action").
 */
export interface SessionView {
  /**
   * The result of `id` was answered in this session, and since then another call with effects
   * reached the engine and completed before this call arrived: the caller has moved on.
   */
  movedOnSince(id: string): boolean;
}

/** One call's place in its session's order. */
export interface Arrival extends SessionView {
  /** This call's own execution completed: a later repeat of what was answered before it moved on. */
  ran(): void;
  /** The result of `id` was answered to this call. */
  answer(id: string): void;
}

interface SessionCalls {
  /** Calls with effects that reached the engine, counted: each call's position is the count at its arrival. */
  arrivals: number;
  /** The latest position of a call that ran and completed. */
  ranThrough: number;
  /** Execution id → the count of arrivals when its result was last answered in this session. */
  answeredAt: Map<string, number>;
}

/**
 * The order of each session's calls with effects, in this process's memory. A session belongs to
 * one process (stdio; an HTTP session lives where it was opened), so nothing here needs the
 * store; a process that restarted has a new session anyway, and across sessions a repeat stays a
 * retry. Positions count arrivals, not time: the rule must give the same answer on a slow machine.
 */
export class SessionOrder {
  readonly #sessions = new Map<string, SessionCalls>();

  /** Where `caller`'s call stands in its session; undefined without a session (nothing to order). */
  arrive(caller: Caller): Arrival | undefined {
    if (caller.session === null) return undefined;
    const calls = this.#calls(JSON.stringify([caller.actor, caller.session]));
    const position = ++calls.arrivals;
    // Read now, at arrival: a call that completes while this one is being handled did not come before it.
    const ranBefore = calls.ranThrough;
    return {
      movedOnSince: (id) => {
        const answeredAt = calls.answeredAt.get(id);
        return answeredAt !== undefined && ranBefore > answeredAt;
      },
      ran: () => {
        calls.ranThrough = Math.max(calls.ranThrough, position);
      },
      answer: (id) => {
        calls.answeredAt.delete(id);
        calls.answeredAt.set(id, calls.arrivals);
        if (calls.answeredAt.size > MAX_ANSWERS_PER_SESSION) {
          const oldest = calls.answeredAt.keys().next().value;
          if (oldest !== undefined) calls.answeredAt.delete(oldest);
        }
      },
    };
  }

  #calls(key: string): SessionCalls {
    let calls = this.#sessions.get(key);
    if (calls) this.#sessions.delete(key);
    else calls = { arrivals: 0, ranThrough: 0, answeredAt: new Map() };
    this.#sessions.set(key, calls);
    if (this.#sessions.size > MAX_SESSIONS) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) this.#sessions.delete(oldest);
    }
    return calls;
  }
}
