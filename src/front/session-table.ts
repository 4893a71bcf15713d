import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { HTTP_FRONT_DEFAULTS } from '../defaults.js';
import { IDEM_CODES } from '../errors.js';
import { type IdleTimeouts, type IdleTracked, isIdle } from './idle-sessions.js';
import { rpcError } from './replies.js';

/** What the front may ask of whatever serves a session (a gateway session; the library's server says nothing). */
export interface ServedSession {
  /** Work of the session still under way though no HTTP request is open (a call the client stopped waiting for). */
  readonly inProgress: boolean;
}

/** What the table keeps of a session. */
export interface TableSession extends IdleTracked {
  /** Who the caps count it against: the actor the gateway will give the session. */
  actor: string;
  served?: ServedSession | undefined;
  /** Ends the session (and, in a gateway, its upstream connections). */
  close(): void;
}

/** How many stateful sessions may be open: in all, and per actor. */
export interface SessionCaps {
  maxSessions: number;
  maxSessionsPerActor: number;
}

/**
 * Bounds that hold a few clients that never end their sessions (each a set of
 * upstream processes) without refusing a busy team: past either, the least
 * recently used session with nothing in progress is closed for the new one.
 */
export const DEFAULT_SESSION_CAPS: SessionCaps = {
  maxSessions: HTTP_FRONT_DEFAULTS.maxSessions,
  maxSessionsPerActor: HTTP_FRONT_DEFAULTS.maxSessionsPerActor,
};

/** Why a session is closed by the front (not by its client). */
export type SessionCloseReason = 'idle' | 'evicted';

/** A new session refused: every session under the cap it would exceed is in use right now. */
export interface SessionsFull {
  status: 429 | 503;
  /** The refusal, with the initialize's id (null: a request without one, an HTTP+SSE stream). */
  reply(id: RequestId | null): ReturnType<typeof rpcError>;
}

/**
 * The open stateful sessions of an HTTP front, and the two rules that close
 * them without their client: idleness (idle-sessions.ts) and the caps. A
 * session with anything in progress — a request, an open stream, a call its
 * client stopped waiting for — is never closed by either.
 */
export class SessionTable<S extends TableSession> {
  readonly #byId = new Map<string, S>();
  /** Every session the caps count: those with an id, and those whose initialize is under way. */
  readonly #counted = new Set<S>();
  readonly #caps: SessionCaps;
  readonly #idle: IdleTimeouts;
  readonly #clock: () => number;
  readonly #onClosed: ((session: S, reason: SessionCloseReason) => void) | undefined;

  constructor(options: {
    caps: SessionCaps;
    idle: IdleTimeouts;
    clock: () => number;
    onClosed?: (session: S, reason: SessionCloseReason) => void;
  }) {
    this.#caps = options.caps;
    this.#idle = options.idle;
    this.#clock = options.clock;
    this.#onClosed = options.onClosed;
  }

  get(id: string): S | undefined {
    return this.#byId.get(id);
  }

  /** The session got its id: it can be reached by it now. */
  identified(id: string, session: S): void {
    this.#byId.set(id, session);
    this.#counted.add(session);
  }

  /** A session ended (by anyone): it counts no more. */
  forget(session: S, id: string | undefined): void {
    if (id !== undefined && this.#byId.get(id) === session) this.#byId.delete(id);
    this.#counted.delete(session);
  }

  values(): IterableIterator<S> {
    return this.#counted.values();
  }

  /**
   * Makes room for a new session of `actor`, closing the least recently used
   * session with nothing in progress where a cap is reached (the actor's own
   * first; at the overall cap, anyone's), and counts the new one at once, so
   * that initializes arriving together cannot pass a cap together. Returns the
   * refusal when no session can be closed.
   */
  admit(session: S): SessionsFull | undefined {
    const mine = [...this.#counted].filter((s) => s.actor === session.actor);
    if (mine.length >= this.#caps.maxSessionsPerActor && !this.#evictFrom(mine)) {
      return full(429, this.#caps.maxSessionsPerActor, 'actor');
    }
    if (this.#counted.size >= this.#caps.maxSessions && !this.#evictFrom([...this.#counted])) {
      return full(503, this.#caps.maxSessions, 'all');
    }
    this.#counted.add(session);
    return undefined;
  }

  /** Closes the sessions idle by now and says how many. */
  closeIdle(): number {
    const now = this.#clock();
    let closed = 0;
    for (const session of [...this.#byId.values()]) {
      if (this.#working(session)) {
        // Its idle time starts when that work ends, not at its last HTTP request.
        session.lastSeen = now;
        continue;
      }
      if (!isIdle(session, now, this.#idle)) continue;
      this.#close(session, 'idle');
      closed++;
    }
    return closed;
  }

  #evictFrom(candidates: S[]): boolean {
    const victim = candidates.filter((s) => !this.#working(s)).sort((a, b) => a.lastSeen - b.lastSeen)[0];
    if (!victim) return false;
    this.#close(victim, 'evicted');
    return true;
  }

  #working(session: S): boolean {
    return session.busy > 0 || session.served?.inProgress === true;
  }

  #close(session: S, reason: SessionCloseReason): void {
    for (const [id, s] of this.#byId) if (s === session) this.#byId.delete(id);
    this.#counted.delete(session);
    try {
      this.#onClosed?.(session, reason);
    } catch {
      // Reporting a close must not stop it.
    }
    session.close();
  }
}

function full(status: 429 | 503, max: number, scope: 'actor' | 'all'): SessionsFull {
  const what =
    scope === 'actor'
      ? `this caller already has ${max} open sessions on the gateway (listen.http.max_sessions_per_actor)`
      : `the gateway already has ${max} open sessions (listen.http.max_sessions)`;
  return {
    status,
    reply: (id) =>
      rpcError(
        -32000,
        `${IDEM_CODES.IDEM_SESSIONS_FULL}: ${what}, each with a request or stream in progress; no session was started. End the sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), or retry after one of them finishes.`,
        id,
        { code: IDEM_CODES.IDEM_SESSIONS_FULL, limit: scope, max },
      ),
  };
}
