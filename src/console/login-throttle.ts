/**
 * Failed logins slow down whoever keeps failing: per client address and per
 * operator name, so that neither many names from one address nor one name
 * from many addresses gets an unlimited run of guesses at the operator token.
 *
 * The first FREE_FAILURES failures of a key cost nothing (typos); each one
 * after locks the key for twice as long as the last, from FIRST_LOCK_MS up to
 * MAX_LOCK_MS. While a key is locked an attempt is refused before the token is
 * looked at (429 with Retry-After), and is not counted. A success clears its
 * keys; a key with no failure for FORGET_AFTER_MS after its lock is forgotten.
 */

export const FREE_FAILURES = 5;
export const FIRST_LOCK_MS = 1_000;
export const MAX_LOCK_MS = 15 * 60_000;
export const FORGET_AFTER_MS = 15 * 60_000;
/** Keys kept at most; past it the longest-quiet ones go first (an address or name flood cannot grow memory). */
export const MAX_TRACKED_KEYS = 10_000;

interface Failures {
  count: number;
  lockedUntil: number;
  forgetAt: number;
}

export class LoginThrottle {
  readonly #keys = new Map<string, Failures>();
  readonly #clock: () => number;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  /** How long before any of these keys may try again (0: now). */
  retryAfterMs(keys: readonly string[]): number {
    const now = this.#clock();
    let wait = 0;
    for (const key of keys) {
      const failures = this.#current(key, now);
      if (failures) wait = Math.max(wait, failures.lockedUntil - now);
    }
    return wait;
  }

  failed(keys: readonly string[]): void {
    const now = this.#clock();
    for (const key of keys) {
      const count = (this.#current(key, now)?.count ?? 0) + 1;
      const lockMs =
        count < FREE_FAILURES ? 0 : Math.min(FIRST_LOCK_MS * 2 ** (count - FREE_FAILURES), MAX_LOCK_MS);
      // Deleted and set again, so the Map's order is by last failure: the quietest key is first.
      this.#keys.delete(key);
      this.#keys.set(key, { count, lockedUntil: now + lockMs, forgetAt: now + lockMs + FORGET_AFTER_MS });
    }
    this.#bound(now);
  }

  succeeded(keys: readonly string[]): void {
    for (const key of keys) this.#keys.delete(key);
  }

  /** Keys tracked now (for tests and their bound). */
  get size(): number {
    return this.#keys.size;
  }

  #current(key: string, now: number): Failures | undefined {
    const failures = this.#keys.get(key);
    if (failures && failures.forgetAt <= now) {
      this.#keys.delete(key);
      return undefined;
    }
    return failures;
  }

  #bound(now: number): void {
    if (this.#keys.size <= MAX_TRACKED_KEYS) return;
    for (const [key, failures] of this.#keys) if (failures.forgetAt <= now) this.#keys.delete(key);
    for (const key of this.#keys.keys()) {
      if (this.#keys.size <= MAX_TRACKED_KEYS) break;
      this.#keys.delete(key);
    }
  }
}

/** The throttle's keys of one login attempt: the client's address, and the name it logs in as (case folded). */
export function loginKeys(address: string, operator: string | undefined): string[] {
  return [`address:${address}`, ...(operator ? [`name:${operator.toLowerCase()}`] : [])];
}

/** A bearer token at /metrics is a guess at the same token: throttled per address, apart from the login form's keys. */
export function bearerKeys(address: string): string[] {
  return [`bearer:${address}`];
}

/** Retry-After in whole seconds, never 0 while locked. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
