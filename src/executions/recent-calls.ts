/**
 * What a deliberate repeat needs of an earlier call: the tool and its
 * validated arguments. The store keeps only a redacted preview (secrets never
 * land there), so the arguments live here, in this process's memory, and
 * nowhere else.
 */
export interface RepeatableCall {
  tool: string;
  /** A private copy of the validated arguments, taken when the call came in. */
  arguments: unknown;
  actor: string;
}

/**
 * The most recent calls by execution ref, bounded: the oldest is forgotten
 * first. A ref that is no longer here (another process ran it, this one
 * restarted, or it was pushed out) can still be repeated: the engine then
 * retires its stored result, so the model's next identical call runs afresh.
 */
export class RecentCalls {
  readonly #calls = new Map<string, RepeatableCall>();

  constructor(readonly max = 256) {}

  remember(ref: string, call: RepeatableCall): void {
    this.#calls.delete(ref);
    this.#calls.set(ref, call);
    while (this.#calls.size > this.max) {
      const oldest = this.#calls.keys().next().value as string;
      this.#calls.delete(oldest);
    }
  }

  get(ref: string): RepeatableCall | undefined {
    return this.#calls.get(ref);
  }
}
