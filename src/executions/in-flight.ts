/**
 * What this process has under way for calls with effects: calls being run, outcomes that came
 * after their caller was answered (a timeout, a task) and are still to be recorded, outcomes held
 * until the store answers (late-outcome.ts). A closing process waits for it, within its grace
 * (docs/reliability.md, "Restarts and a store that blinks"), so that what it dispatched is
 * recorded rather than left to become `unknown`.
 *
 * A call that follows its target's own task, recorded on its execution, is not waited for: the
 * task goes on without this process, and the next one follows it again (resume.ts).
 */
export class InFlight {
  readonly #entries = new Set<{ call: object | undefined }>();
  /** Calls whose target's task is on the record: left to the next process. */
  readonly #leftToNext = new WeakSet<object>();
  #idle: Array<() => void> = [];

  /** Counts `work` (of `call`, when it is one's) until it settles; its rejection stays the caller's to handle. */
  track<T>(work: Promise<T>, call?: object): Promise<T> {
    const entry = { call };
    this.#entries.add(entry);
    const settled = () => {
      this.#entries.delete(entry);
      this.#wake();
    };
    work.then(settled, settled);
    return work;
  }

  /** `call` now follows its target's task, recorded on its execution: no closing process waits for it. */
  leaveToNext(call: object): void {
    this.#leftToNext.add(call);
    this.#wake();
  }

  /** How much is under way that a closing process waits for. */
  get count(): number {
    let count = 0;
    for (const { call } of this.#entries) if (!call || !this.#leftToNext.has(call)) count++;
    return count;
  }

  /** Settles once nothing a closing process waits for is under way (at once if nothing is). */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #wake(): void {
    if (this.#idle.length === 0 || this.count > 0) return;
    for (const resolve of this.#idle.splice(0)) resolve();
  }
}
