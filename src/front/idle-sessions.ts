/** What the idle rule reads of a session. */
export interface IdleTracked {
  /** Requests (and open GET streams) in progress. */
  busy: number;
  /** End of the last request (ms, by the front's clock). */
  lastSeen: number;
}

/**
 * A session is idle — and is closed, with its upstreams — when nothing is in
 * progress on it and its last request ended `idleMs` or more ago. A session
 * busy with a long call or an open stream is never idle, however old.
 */
export function isIdle(session: IdleTracked, now: number, idleMs: number): boolean {
  return session.busy === 0 && session.lastSeen <= now - idleMs;
}

/** How often the front looks for idle sessions: half the timeout, within 10 ms and a minute. */
export function idleSweepIntervalMs(idleMs: number): number {
  return Math.min(Math.max(idleMs / 2, 10), 60_000);
}
