import { HTTP_FRONT_DEFAULTS } from '../defaults.js';

/** What the idle rule reads of a session. */
export interface IdleTracked {
  /** Requests (and open GET streams) in progress. */
  busy: number;
  /** End of the last request (ms, by the front's clock). */
  lastSeen: number;
  /** A request other than the handshake (initialize, its notification) has come on it. */
  used: boolean;
}

/** How long a session may sit with nothing in progress before it is closed (ms; 0: never). */
export interface IdleTimeouts {
  /** A session that has served a request beyond the handshake. */
  usedMs: number;
  /** A session that never did (a client that connected and left, or probed and opened another). */
  unusedMs: number;
}

/**
 * The timeouts a front uses: the unused one is never longer than the idle one (and off with it).
 * By default (HTTP_FRONT_DEFAULTS) ten minutes for a session in use: clients seldom send DELETE,
 * and each session of the gateway holds its own upstream processes. A client that keeps its
 * session has an open GET stream (never idle), or calls again within that long, or opens a new
 * session after a 404. One minute for a session that never got past the handshake: nobody is
 * about to use it.
 */
export function idleTimeouts(idleMs = HTTP_FRONT_DEFAULTS.sessionIdleMs, unusedMs?: number): IdleTimeouts {
  return {
    usedMs: idleMs,
    unusedMs: unusedMs ?? (idleMs > 0 ? Math.min(idleMs, HTTP_FRONT_DEFAULTS.sessionUnusedMs) : 0),
  };
}

/**
 * A session is idle — and is closed, with its upstreams — when nothing is in
 * progress on it and its last request ended its timeout or more ago. A session
 * busy with a long call or an open stream is never idle, however old.
 */
export function isIdle(session: IdleTracked, now: number, timeouts: IdleTimeouts): boolean {
  const ms = session.used ? timeouts.usedMs : timeouts.unusedMs;
  return ms > 0 && session.busy === 0 && session.lastSeen <= now - ms;
}

/** How often the front looks for idle sessions: half the shortest timeout, within 10 ms and a minute (0: never). */
export function idleSweepIntervalMs(timeouts: IdleTimeouts): number {
  const set = [timeouts.usedMs, timeouts.unusedMs].filter((ms) => ms > 0);
  if (set.length === 0) return 0;
  return Math.min(Math.max(Math.min(...set) / 2, 10), 60_000);
}
