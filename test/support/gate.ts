/**
 * A hold for a test's far side: a handler awaits `wait()` (which also marks it
 * as started), and the test decides when it finishes with `open()`. Orders
 * events by condition, not by sleeping.
 */
export class Gate {
  #open!: () => void;
  #started!: () => void;
  readonly #opened = new Promise<void>((resolve) => {
    this.#open = resolve;
  });
  /** Resolves once a handler has reached `wait()`. */
  readonly started = new Promise<void>((resolve) => {
    this.#started = resolve;
  });

  wait(): Promise<void> {
    this.#started();
    return this.#opened;
  }

  open(): void {
    this.#open();
  }
}

/** A clock a test moves by hand; pass `now` to stores and engines. */
export function manualClock(start = Date.UTC(2026, 0, 1)) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}
