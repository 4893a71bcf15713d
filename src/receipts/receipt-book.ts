import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface ReceiptBookOptions {
  /** Most receipts held at once. At the bound a *new* id is refused (IDEM_RECEIPTS_FULL). */
  maxReceipts?: number;
  /** How long a finished receipt still answers a resend. */
  retentionMs?: number;
  clock?: () => number;
}

interface Receipt {
  fingerprint: string;
  reply: Promise<JSONRPCMessage>;
  /** When the reply was settled; null while the request still runs. */
  settledAt: number | null;
}

/** What to do with an arriving request. */
export type ReceiptDecision =
  /** First time: run it, then `settle` with the reply (results and errors alike). */
  | { kind: 'new'; settle: (reply: JSONRPCMessage) => void; idReused: boolean }
  /** The same message again: wait for the first one's reply. Nothing runs twice. */
  | { kind: 'duplicate'; reply: Promise<JSONRPCMessage> }
  /** Same id, different content, inside a session: reject with MCP_REQUEST_ID_REUSED. */
  | { kind: 'id_reused' }
  /** At the bound: refuse (nothing runs). */
  | { kind: 'full' };

/**
 * A receipt answers a resend of the very same message, which a transport or a
 * retrying HTTP client sends within seconds; later repeats are the intent
 * layer's. So receipts are kept 2 minutes, and up to 100 000 of them: the bound
 * refuses new calls only past ~800 calls/s sustained (the earlier 10 000 for
 * 10 minutes refused past ~17/s).
 */
export const DEFAULT_MAX_RECEIPTS = 100_000;
export const DEFAULT_RECEIPT_RETENTION_MS = 2 * 60_000;

/**
 * Layer 1 (DESIGN §3): request-id receipts. The reply *promise* is stored
 * before the request runs, so a resend that arrives while the first is still
 * running waits on the same promise instead of starting a second run.
 *
 * Never evicted: unfinished receipts, and finished ones inside retention.
 */
export class ReceiptBook {
  readonly #receipts = new Map<string, Receipt>();
  readonly #max: number;
  readonly #retentionMs: number;
  readonly #clock: () => number;

  constructor(options: ReceiptBookOptions = {}) {
    this.#max = options.maxReceipts ?? DEFAULT_MAX_RECEIPTS;
    this.#retentionMs = options.retentionMs ?? DEFAULT_RECEIPT_RETENTION_MS;
    this.#clock = options.clock ?? Date.now;
  }

  get size(): number {
    return this.#receipts.size;
  }

  /**
   * @param key request key (src/identity/request-key.ts)
   * @param fingerprint digest of the validated request
   * @param sessionScoped ids are unique per session (reject reuse) vs no session (reuse = a new request)
   */
  begin(key: string, fingerprint: string, sessionScoped: boolean): ReceiptDecision {
    const existing = this.#receipts.get(key);
    if (existing && !this.#expired(existing)) {
      if (existing.fingerprint === fingerprint) return { kind: 'duplicate', reply: existing.reply };
      if (sessionScoped) return { kind: 'id_reused' };
    }
    if (!existing && this.#receipts.size >= this.#max) {
      this.#trim();
      if (this.#receipts.size >= this.#max) return { kind: 'full' };
    }
    let settle!: (reply: JSONRPCMessage) => void;
    const reply = new Promise<JSONRPCMessage>((resolve) => {
      settle = resolve;
    });
    const receipt: Receipt = { fingerprint, reply, settledAt: null };
    this.#receipts.set(key, receipt);
    return {
      kind: 'new',
      idReused: existing !== undefined && !this.#expired(existing),
      settle: (message) => {
        if (receipt.settledAt !== null) return;
        receipt.settledAt = this.#clock();
        settle(message);
      },
    };
  }

  /** Drops finished receipts past retention. Called at the bound, and by the sweeper. */
  trim(): number {
    return this.#trim();
  }

  #expired(receipt: Receipt): boolean {
    return receipt.settledAt !== null && receipt.settledAt + this.#retentionMs <= this.#clock();
  }

  #trim(): number {
    let removed = 0;
    for (const [key, receipt] of this.#receipts) {
      if (this.#expired(receipt)) {
        this.#receipts.delete(key);
        removed++;
      }
    }
    return removed;
  }
}
