/**
 * What this process has under way for calls with effects: calls being run, outcomes that came
 * after their caller was answered (a timeout, a task) and are still to be recorded, outcomes held
 * until the store answers (late-outcome.ts). A closing process waits for it, within its grace
 * (docs/reliability.md, "Restarts"), so that what it dispatched is recorded rather than left to
 * become `unknown`.
 */
export class InFlight {
  #count = 0;
  #idle: Array<() => void> = [];

  /** Counts `work` until it settles (fulfilled or not; its rejection stays the caller's to handle). */
  track<T>(work: Promise<T>): Promise<T> {
    this.#count++;
    const settled = () => {
      if (--this.#count > 0) return;
      for (const resolve of this.#idle.splice(0)) resolve();
    };
    work.then(settled, settled);
    return work;
  }

  /** How much is under way. */
  get count(): number {
    return this.#count;
  }

  /** Settles once nothing is under way (at once if nothing is). */
  idle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}
