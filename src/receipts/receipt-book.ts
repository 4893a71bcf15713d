import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { RECEIPT_DEFAULTS } from '../defaults.js';

export interface ReceiptBookOptions {
  /** Most receipts held at once, all actors together. At the bound a *new* id is refused (IDEM_RECEIPTS_FULL). */
  maxReceipts?: number;
  /** Most receipts one actor may hold at once: one busy (or hostile) actor cannot lock the others out. */
  maxReceiptsPerActor?: number;
  /** How long a finished receipt still answers a resend. */
  retentionMs?: number;
  clock?: () => number;
}

/**
 * What a waiting duplicate receives when the receipt it waited on was released
 * without a reply (the transport refused the request, the client cancelled it,
 * the session ended): nothing answers it from here, so decide again.
 */
export type ReceiptReply = JSONRPCMessage | null;

/**
 * A request's digest, or how to compute it. Most requests are never sent
 * twice, so the transport passes a function, and the book calls it only when
 * a second request with the same key must be compared with the first. It
 * throws (InvalidInputError) when the request cannot be digested.
 */
export type RequestDigest = string | (() => string);

interface Receipt {
  owner: string;
  group: string | undefined;
  /** The request's digest, computed on first use and then kept (the request it came from is let go). */
  digest: () => string;
  reply: Promise<ReceiptReply>;
  resolve: (reply: ReceiptReply) => void;
  /** When the reply was settled (or the receipt released as a tombstone); null while the request still runs. */
  settledAt: number | null;
  /** Released unanswered but kept as a tombstone: the same message runs anew, other content is still a reused id. */
  released?: boolean;
}

/** What to do with an arriving request. */
export type ReceiptDecision =
  /**
   * First time: run it, then `settle` with the reply (results and errors alike).
   * `release` drops the receipt (a settled one: it is of no more use; an
   * unsettled one: its waiting duplicates get `null` and decide again). With
   * `tombstone`, an unanswered receipt stays for its retention so the id is
   * still taken: the same message runs anew, other content is a reused id.
   */
  | {
      kind: 'new';
      settle: (reply: JSONRPCMessage) => void;
      release: (tombstone?: boolean) => void;
      idReused: boolean;
    }
  /** The same message again: wait for the first one's reply (`null`: released unanswered). Nothing runs twice. */
  | { kind: 'duplicate'; reply: Promise<ReceiptReply> }
  /** Same id, different content, inside a session: reject with MCP_REQUEST_ID_REUSED. */
  | { kind: 'id_reused' }
  /** At the bound (the whole book's or this actor's): refuse (nothing runs). */
  | { kind: 'full' };

/**
 * Layer 1 (docs/lifecycle.md, step 2): request-id receipts. The reply *promise* is stored
 * before the request runs, so a resend that arrives while the first is still
 * running waits on the same promise instead of starting a second run.
 *
 * Never evicted: unfinished receipts, and finished ones inside retention. An
 * unfinished receipt goes only when its holder releases it (a request that
 * will get no reply), so no waiter hangs on a reply that cannot come.
 */
export class ReceiptBook {
  readonly #receipts = new Map<string, Receipt>();
  readonly #perOwner = new Map<string, number>();
  /** Keys of each group (a transport session): they go when the session does. */
  readonly #groups = new Map<string, Set<string>>();
  /**
   * Settled receipts in settle order: expiry follows it, so trimming never scans the live ones.
   * A slot the head has passed is emptied at once (the array itself is compacted only now and
   * then), so that a receipt trimmed or released is not kept alive by it.
   */
  #settled: ({ key: string; receipt: Receipt } | undefined)[] = [];
  #settledHead = 0;
  readonly #max: number;
  readonly #maxPerOwner: number;
  readonly #retentionMs: number;
  readonly #clock: () => number;

  constructor(options: ReceiptBookOptions = {}) {
    // What the options leave out: RECEIPT_DEFAULTS (src/defaults.ts says why these bounds).
    this.#max = options.maxReceipts ?? RECEIPT_DEFAULTS.maxReceipts;
    this.#maxPerOwner = Math.min(
      this.#max,
      options.maxReceiptsPerActor ?? RECEIPT_DEFAULTS.maxReceiptsPerActor,
    );
    this.#retentionMs = options.retentionMs ?? RECEIPT_DEFAULTS.retentionMs;
    this.#clock = options.clock ?? Date.now;
  }

  get size(): number {
    return this.#receipts.size;
  }

  /** Receipts held for one actor. */
  sizeOf(owner: string): number {
    return this.#perOwner.get(owner) ?? 0;
  }

  /**
   * @param key request key (src/identity/request-key.ts)
   * @param fingerprint digest of the validated request, or the function that computes it (called
   *   only when a live receipt holds the same key; what it throws, `begin` throws, and takes no receipt)
   * @param sessionScoped ids are unique per session (reject reuse) vs no session (reuse = a new request)
   * @param holder.owner the actor the receipt counts against (per-actor bound)
   * @param holder.group what the receipt goes with (a transport session: see `releaseGroup`)
   */
  begin(
    key: string,
    fingerprint: RequestDigest,
    sessionScoped: boolean,
    holder: { owner?: string; group?: string } = {},
  ): ReceiptDecision {
    const owner = holder.owner ?? '';
    const digest = memoized(fingerprint);
    let existing = this.#receipts.get(key);
    if (existing && !this.#expired(existing) && !digestible(existing)) {
      // Its request could not be digested: when digests were taken at once, such a request
      // was never given a receipt. So it is dropped, and this one is decided as if it were absent.
      this.#delete(key, existing);
      existing.resolve(null);
      existing = undefined;
    }
    const live = existing !== undefined && !this.#expired(existing);
    const same = live && existing?.digest() === digest();
    if (existing && live) {
      if (same) {
        if (!existing.released) return { kind: 'duplicate', reply: existing.reply };
      } else if (sessionScoped) return { kind: 'id_reused' };
    }
    if (!existing && this.#atBound(owner)) {
      this.#trim();
      if (this.#atBound(owner)) return { kind: 'full' };
    }
    if (existing) this.#delete(key, existing);
    let resolve!: (reply: ReceiptReply) => void;
    const reply = new Promise<ReceiptReply>((r) => {
      resolve = r;
    });
    const receipt: Receipt = { owner, group: holder.group, digest, reply, resolve, settledAt: null };
    this.#receipts.set(key, receipt);
    this.#perOwner.set(owner, this.sizeOf(owner) + 1);
    if (receipt.group !== undefined) {
      const keys = this.#groups.get(receipt.group) ?? new Set<string>();
      this.#groups.set(receipt.group, keys.add(key));
    }
    return {
      kind: 'new',
      idReused: live && !same,
      settle: (message) => {
        if (receipt.settledAt !== null) return;
        receipt.settledAt = this.#clock();
        if (this.#receipts.get(key) === receipt) this.#settled.push({ key, receipt });
        resolve(message);
      },
      release: (tombstone = false) => {
        if (this.#receipts.get(key) === receipt) {
          if (tombstone && receipt.settledAt === null) {
            receipt.released = true;
            receipt.settledAt = this.#clock();
            this.#settled.push({ key, receipt });
          } else this.#delete(key, receipt);
        }
        // A waiter on an unanswered receipt decides again instead of waiting forever (no-op once answered).
        resolve(null);
      },
    };
  }

  /**
   * A group's session ended: its unanswered receipts are released (waiters
   * decide again), and its settled ones dropped unless `keepSettled` (ids with
   * no session scope can still match a resend arriving on another transport).
   */
  releaseGroup(group: string, keepSettled = false): void {
    const keys = this.#groups.get(group);
    if (!keys) return;
    this.#groups.delete(group);
    for (const key of keys) {
      const receipt = this.#receipts.get(key);
      if (!receipt || receipt.group !== group) continue;
      if (keepSettled && receipt.settledAt !== null) {
        receipt.group = undefined;
        continue;
      }
      this.#delete(key, receipt);
      if (receipt.settledAt === null) receipt.resolve(null);
    }
  }

  /** Drops finished receipts past retention. Called at the bound, and by the sweeper. */
  trim(): number {
    return this.#trim();
  }

  #atBound(owner: string): boolean {
    return this.#receipts.size >= this.#max || this.sizeOf(owner) >= this.#maxPerOwner;
  }

  #delete(key: string, receipt: Receipt): void {
    this.#receipts.delete(key);
    if (receipt.group !== undefined) {
      const keys = this.#groups.get(receipt.group);
      keys?.delete(key);
      if (keys?.size === 0) this.#groups.delete(receipt.group);
    }
    const left = this.sizeOf(receipt.owner) - 1;
    if (left > 0) this.#perOwner.set(receipt.owner, left);
    else this.#perOwner.delete(receipt.owner);
  }

  #expired(receipt: Receipt): boolean {
    return receipt.settledAt !== null && receipt.settledAt + this.#retentionMs <= this.#clock();
  }

  #trim(): number {
    let removed = 0;
    while (this.#settledHead < this.#settled.length) {
      const { key, receipt } = this.#settled[this.#settledHead] as { key: string; receipt: Receipt };
      // Released or replaced since it settled: nothing of it is left here.
      if (this.#receipts.get(key) !== receipt) {
        this.#settled[this.#settledHead++] = undefined;
        continue;
      }
      if (!this.#expired(receipt)) break;
      this.#delete(key, receipt);
      this.#settled[this.#settledHead++] = undefined;
      removed++;
    }
    if (this.#settledHead > 1024 && this.#settledHead * 2 > this.#settled.length) {
      this.#settled = this.#settled.slice(this.#settledHead);
      this.#settledHead = 0;
    }
    return removed;
  }
}

/** `digest` as a function that computes it once; the computation (and what it holds) is let go after. */
function memoized(digest: RequestDigest): () => string {
  if (typeof digest === 'string') return () => digest;
  let compute: (() => string) | undefined = digest;
  let value: string | undefined;
  return () => {
    if (value === undefined) {
      value = (compute as () => string)();
      compute = undefined;
    }
    return value;
  };
}

function digestible(receipt: Receipt): boolean {
  try {
    receipt.digest();
    return true;
  } catch {
    return false;
  }
}
