import { expirePending } from '../approval/decide.js';
import { signJournalHeads } from '../journal/head-signer.js';
import type { ReceiptBook } from '../receipts/receipt-book.js';
import type { ExecutionStore, SweepResult } from '../store/types.js';

export interface MaintenanceOptions {
  store: ExecutionStore;
  /** How long finished executions are kept (the config's `retention`). */
  retentionMs: number;
  /** The process's request-id receipts, trimmed with each pass; absent for `idem sweep`. */
  receipts?: ReceiptBook;
  /**
   * Where the journal heads are signed (`<dataDir>/journal-head.json`), and with which key file;
   * absent: not signed by this pass (`idem sweep` leaves it to the gateway and `idem audit sign`).
   */
  signing?: { dataDir: string; keyFile?: string };
  /**
   * Takes over the upstream tasks whose follower was lost, before the sweep (the gateway:
   * executions/resume.ts); a failure is said, and the rest of the pass runs all the same.
   */
  resume?: () => Promise<unknown>;
  /** Where a failed periodic pass, or a failed signing, is said. */
  warn: (message: string, fields?: Record<string, unknown>) => void;
}

/** What one pass did. */
export interface MaintenanceReport extends SweepResult {
  /** Approval requests past their timeout, ended as denied (`expired`); 0 in a dry run. */
  approvalsExpired: number;
}

/**
 * The store's upkeep, in one place for every surface that runs it — the
 * gateway (every `sweep_interval`), the library (every
 * `maintenanceIntervalMs`) and `idem sweep` (once): each pass drops receipts
 * past retention, takes over the upstream tasks whose follower was lost (the
 * gateway), turns expired dispatches into `unknown` and deletes finished
 * executions past retention (`store.sweep`), ends approval requests nobody
 * decided in time as denied (`expired`, visible as such in the queue), and
 * leaves what was journaled so far covered by a signed head (docs/security.md).
 */
export class Maintenance {
  readonly #options: MaintenanceOptions;
  #timer: NodeJS.Timeout | undefined;
  /** The signing of the journal heads under way, if any. */
  #signing: Promise<void> | undefined;

  constructor(options: MaintenanceOptions) {
    this.#options = options;
  }

  /** Runs a pass every `intervalMs` (0: never), without keeping the process alive. */
  start(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.#timer = setInterval(() => {
      this.run().catch((error: unknown) => this.#options.warn('sweep failed', { error: String(error) }));
    }, intervalMs);
    this.#timer.unref();
  }

  /**
   * One pass; throws when the store fails (the heads are signed all the same). A dry run only
   * reports what the sweep would change, and changes nothing.
   */
  async run({ dryRun = false } = {}): Promise<MaintenanceReport> {
    const { store, retentionMs, receipts } = this.#options;
    if (!dryRun) receipts?.trim();
    // Before the sweep: a follower taken over at once never reads `unknown` in between.
    if (!dryRun)
      await this.#options
        .resume?.()
        .catch((error: unknown) =>
          this.#options.warn('upstream tasks not resumed', { error: String(error) }),
        );
    try {
      const swept = await store.sweep({ retentionMs, dryRun });
      return { ...swept, approvalsExpired: dryRun ? 0 : await expirePending(store) };
    } finally {
      if (!dryRun) await this.signHeads();
    }
  }

  /**
   * Signs the journals' heads, when the key can be read: a key owned by
   * another user (signing from its own `idem audit sign`) is not an error. A
   * refusal (journal behind its last signed head) is said every time. A slow
   * signing (a big store, a busy disk) is not run twice at once: both would
   * write journal-head.json.
   */
  signHeads(): Promise<void> {
    const signing = this.#options.signing;
    if (!signing) return Promise.resolve();
    this.#signing ??= signJournalHeads(this.#options.store, signing.dataDir, {
      ...(signing.keyFile ? { keyFile: signing.keyFile } : {}),
    })
      .then(
        () => {},
        (error: unknown) => {
          if ((error as NodeJS.ErrnoException).code === 'EACCES') return;
          this.#options.warn('journal heads not signed', { error: String(error) });
        },
      )
      .finally(() => {
        this.#signing = undefined;
      });
    return this.#signing;
  }

  /** No further passes (one under way runs to its end). */
  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * Stops the passes; what was journaled up to now leaves covered by a
   * signature (after any signing under way, which may predate it).
   */
  async close(): Promise<void> {
    this.stop();
    await this.#signing;
    await this.signHeads();
  }
}
