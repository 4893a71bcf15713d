import type { ExecutionRecord } from '../store/types.js';
import type { Logger } from './call.js';

/** The first wait before an outcome is tried again, doubled each time up to LATE_OUTCOME_MAX_DELAY_MS. */
export const LATE_OUTCOME_FIRST_DELAY_MS = 100;
/** The longest wait between two tries: a store that is back is written to within this. */
export const LATE_OUTCOME_MAX_DELAY_MS = 2_000;
/**
 * How long an outcome is held and tried again: the default dispatch timeout, the longest a caller
 * is told to expect an answer. A store down for longer is an incident; what is still held then is
 * given up (logged), and the execution reads `unknown` for an operator, as before.
 */
export const LATE_OUTCOME_WITHIN_MS = 10 * 60_000;
/** Outcomes held at once: each keeps its result in memory. Past it, one more is given up at once. */
export const MAX_HELD_OUTCOMES = 10_000;

/** One held outcome: how to write it (with `late`), how to keep its lease, whom to tell once written. */
export interface HeldOutcome {
  /** The execution's outcome write, as the holder makes it (record-outcome.ts); undefined: it did not land. */
  write(): Promise<ExecutionRecord | undefined>;
  /** Extends the holder's lease; while it holds, no other process declares the execution unknown. */
  renew(): Promise<unknown>;
  /** The write landed. */
  written(record: ExecutionRecord): void;
}

interface Holding {
  outcome: HeldOutcome;
  since: number;
  attempts: number;
  delayMs: number;
  timer: NodeJS.Timeout | undefined;
  /** The try under way, if any: a second one waits for it. */
  trying: Promise<boolean> | undefined;
  done: () => void;
}

/**
 * Outcomes this process holds in memory but could not write: the target answered (and the
 * caller, usually, was answered too), but the store did not take the write. Each is written once
 * the store answers again — tried again with backoff (LATE_OUTCOME_FIRST_DELAY_MS doubling to
 * LATE_OUTCOME_MAX_DELAY_MS) for LATE_OUTCOME_WITHIN_MS, its journal event saying it came late —
 * so that an operator is needed only for what was truly lost.
 *
 * While it waits, the holder's lease is renewed at each try, so other processes go on answering
 * `in flight`. If the lease lapsed all the same (the store was down longer than the lease) and
 * another process made the execution `unknown`, the write still lands: the holder's token survives
 * that, and `unknown` → the outcome is the truth arriving, not a second run. It does not land when
 * the execution moved on — an operator resolved it, or a `keyed` recovery re-sent it under a new
 * holder (who records its own outcome) — and then nothing is written. Nothing here ever dispatches.
 * A retry that reaches this process first has the held outcome written before it decides
 * (`writeNow`), so it is answered with the outcome rather than `unknown`.
 */
export class LateOutcomes {
  readonly #logger: Logger;
  readonly #held = new Map<string, Holding>();
  readonly #now: () => number;
  #stopped = false;

  constructor(logger: Logger, now: () => number = () => performance.now()) {
    this.#logger = logger;
    this.#now = now;
  }

  /** How many outcomes wait to be written. */
  get size(): number {
    return this.#held.size;
  }

  /**
   * Holds the outcome of `ref` (its first write just failed with `error`) and writes it when the
   * store answers. Resolves once it is written, refused or given up: what a closing process waits for.
   */
  hold(ref: string, outcome: HeldOutcome, error: unknown): Promise<void> {
    if (this.#stopped || this.#held.has(ref) || this.#held.size >= MAX_HELD_OUTCOMES) {
      this.#logger.error('outcome could not be recorded', {
        ref,
        error: String(error),
        why: this.#stopped ? 'the process is closing' : 'too many outcomes wait to be written',
      });
      return Promise.resolve();
    }
    this.#logger.warn('outcome could not be recorded yet; it is held and written once the store answers', {
      ref,
      error: String(error),
    });
    return new Promise<void>((done) => {
      const holding: Holding = {
        outcome,
        since: this.#now(),
        attempts: 1,
        delayMs: LATE_OUTCOME_FIRST_DELAY_MS,
        timer: undefined,
        trying: undefined,
        done,
      };
      this.#held.set(ref, holding);
      this.#schedule(ref, holding);
    });
  }

  /**
   * Writes the outcome held for `ref` now, if there is one: a call that would otherwise find its
   * execution `unknown` (its lease lapsed while the store was down) hears the outcome instead.
   * True when it landed.
   */
  async writeNow(ref: string): Promise<boolean> {
    const holding = this.#held.get(ref);
    if (!holding) return false;
    clearTimeout(holding.timer);
    return this.#try(ref, holding);
  }

  /** Gives up every held outcome (the store is closing): each is logged, and reads `unknown` once its lease lapses. */
  stop(): void {
    this.#stopped = true;
    for (const [ref, holding] of this.#held) {
      this.#logger.error('outcome could not be recorded: the process closed before the store answered', {
        ref,
        attempts: holding.attempts,
      });
      this.#finish(ref, holding);
    }
  }

  #schedule(ref: string, holding: Holding): void {
    holding.timer = setTimeout(() => void this.#try(ref, holding), holding.delayMs);
    // What a closing process waits for is hold()'s promise, within its grace: never the timer.
    holding.timer.unref();
    holding.delayMs = Math.min(holding.delayMs * 2, LATE_OUTCOME_MAX_DELAY_MS);
  }

  #try(ref: string, holding: Holding): Promise<boolean> {
    holding.trying ??= this.#attempt(ref, holding).finally(() => {
      holding.trying = undefined;
    });
    return holding.trying;
  }

  async #attempt(ref: string, holding: Holding): Promise<boolean> {
    if (this.#held.get(ref) !== holding) return false;
    holding.attempts++;
    let record: ExecutionRecord | undefined;
    try {
      record = await holding.outcome.write();
    } catch (error) {
      if (this.#now() - holding.since >= LATE_OUTCOME_WITHIN_MS) {
        this.#logger.error('outcome could not be recorded: the store did not answer in time; given up', {
          ref,
          attempts: holding.attempts,
          error: String(error),
        });
        this.#finish(ref, holding);
        return false;
      }
      await holding.outcome.renew().catch(() => {});
      if (this.#held.get(ref) === holding) this.#schedule(ref, holding);
      return false;
    }
    if (record) {
      this.#logger.warn('outcome recorded late, once the store answered', {
        ref,
        attempts: holding.attempts,
      });
      holding.outcome.written(record);
    } else {
      this.#logger.warn(
        'late outcome not recorded: the execution moved on meanwhile (resolved by an operator, or re-sent by another holder)',
        { ref },
      );
    }
    this.#finish(ref, holding);
    return record !== undefined;
  }

  #finish(ref: string, holding: Holding): void {
    clearTimeout(holding.timer);
    if (this.#held.get(ref) === holding) this.#held.delete(ref);
    holding.done();
  }
}
