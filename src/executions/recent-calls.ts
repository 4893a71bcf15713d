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
 * The most recent calls by execution ref, bounded by count and by size: the
 * oldest is forgotten first, and a call whose arguments are larger than a
 * tenth of the budget is not kept at all. A ref that is no longer here
 * (another process ran it, this one restarted, or it was pushed out) can
 * still be repeated: the engine then retires its stored result, so the
 * model's next identical call runs afresh.
 */
export class RecentCalls {
  readonly #calls = new Map<string, { call: RepeatableCall; size: number }>();
  #size = 0;

  constructor(
    readonly maxCalls = 256,
    /** Budget for the arguments, in characters of their JSON. */
    readonly maxSize = 16 * 1024 * 1024,
  ) {}

  /** `size`: the length of the arguments' JSON (what they cost to keep). */
  remember(ref: string, call: RepeatableCall, size: number): void {
    this.#forget(ref);
    if (size > this.maxSize / 10) return;
    this.#calls.set(ref, { call, size });
    this.#size += size;
    while (this.#calls.size > this.maxCalls || this.#size > this.maxSize) {
      this.#forget(this.#calls.keys().next().value as string);
    }
  }

  get(ref: string): RepeatableCall | undefined {
    return this.#calls.get(ref)?.call;
  }

  #forget(ref: string): void {
    const entry = this.#calls.get(ref);
    if (!entry) return;
    this.#calls.delete(ref);
    this.#size -= entry.size;
  }
}
