import type { ActivityEventInput } from '../../journal/events.js';
import { journalParams } from './journal-rows.js';
import { SQL } from './sql.js';
import { type Connections, query } from './transactions.js';

/**
 * One store handle's journal chains (docs/postgres.md, "One chain per writer"). Each write
 * in flight holds one; there are as many as writes were ever in flight at once, at most the
 * pool's size. No two writes in flight share a chain, so their appends never wait for each
 * other.
 */
export class JournalChains {
  readonly #db: Connections;
  /** This handle's journal chains that no write holds now. */
  readonly #idle: number[] = [];
  /** Writes waiting for a chain, when all `#max` are held. */
  readonly #waiters: ((chain: number | undefined) => void)[] = [];
  /** Chains registered by this handle (or being registered), at most `#max`. */
  #count = 0;
  /** As many as writes can run at once: the pool's size. */
  readonly #max: number;

  constructor(db: Connections, max: number) {
    this.#db = db;
    this.#max = max;
  }

  /**
   * Runs `work` holding one of the chains (see holding), with the journal parameters
   * of `events` (journalParams). Without events, no chain is held.
   */
  async withEvents<T>(events: ActivityEventInput[], work: (journal: unknown[]) => Promise<T>): Promise<T> {
    if (events.length === 0) return work(journalParams([], null));
    return this.holding((chain) => work(journalParams(events, chain)));
  }

  /**
   * Runs `work` holding one of the chains. A chain whose write failed is dropped, not
   * reused: its statement may still be running on a connection the pool gave up on.
   */
  async holding<T>(work: (chain: number) => Promise<T>): Promise<T> {
    const chain = await this.#take();
    let result: T;
    try {
      result = await work(chain);
    } catch (error) {
      this.#count--;
      this.#give(undefined);
      throw error;
    }
    this.#give(chain);
    return result;
  }

  /**
   * An idle chain, else a new one while fewer than the pool's size exist (no
   * more writes than that can run at once), else the next one given back.
   */
  async #take(): Promise<number> {
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle;
    if (this.#count >= this.#max) {
      const given = await new Promise<number | undefined>((resolve) => this.#waiters.push(resolve));
      if (given !== undefined) return given;
      // A dropped chain made room: register one in its place.
    }
    this.#count++;
    try {
      return await this.#register();
    } catch (error) {
      this.#count--;
      this.#give(undefined);
      throw error;
    }
  }

  /** Hands `chain` to the next waiter, or keeps it idle; `undefined`: a chain was dropped, a waiter may register one. */
  #give(chain: number | undefined): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter(chain);
    else if (chain !== undefined) this.#idle.push(chain);
  }

  async #register(): Promise<number> {
    return this.#db.use(
      async (db) => (await query<{ chain: number }>(SQL.registerChain, [])(db)).rows[0]!.chain,
    );
  }
}
