/**
 * When a lost upstream is tried again: one attempt at a time, each delay
 * double the last up to `maxMs`, so a crash-looping upstream is not hammered;
 * back to the first delay once an attempt has served.
 */
export class RestartBackoff {
  #delayMs: number;
  #timer: NodeJS.Timeout | undefined;
  /** How many times it went down since it last served: the attempt being made. */
  #attempt = 0;

  constructor(
    readonly firstMs: number,
    readonly maxMs: number,
  ) {
    this.#delayMs = firstMs;
  }

  /** An attempt is waiting for its delay. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  /** Down since it last served: an attempt is waiting or being made. */
  get retrying(): boolean {
    return this.#timer !== undefined || this.#attempt > 0;
  }

  get attempt(): number {
    return this.#attempt;
  }

  /**
   * Schedules the next attempt, unless one is waiting already. Returns its
   * delay (undefined: one was waiting). The timer does not hold the process open.
   */
  schedule(attemptNow: (attempt: number, delayMs: number) => void): number | undefined {
    if (this.#timer !== undefined) return undefined;
    const delayMs = this.#delayMs;
    this.#delayMs = Math.min(delayMs * 2, this.maxMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#attempt++;
      attemptNow(this.#attempt, delayMs);
    }, delayMs);
    this.#timer.unref();
    return delayMs;
  }

  /** An attempt served: the next loss starts again from the first delay. Returns the attempt that served. */
  served(): number {
    const attempt = this.#attempt;
    this.#attempt = 0;
    this.#delayMs = this.firstMs;
    return attempt;
  }

  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
