import type { ReplayClass } from '../contracts/contract.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../journal/events.js';
import type { JournalReader } from '../journal/reader.js';
import type { ExecutionState } from '../journal/states.js';
import type { StoredOutcome } from './outcome.js';

/**
 * One execution: one accepted attempt to perform one intended action.
 * Times are milliseconds since the epoch by the *store's* clock.
 */
export interface ExecutionRecord {
  /** `exe_` + ULID. Also the target's idempotency key. */
  id: string;
  /** Intent fingerprint (keyed digest of the canonical action record). */
  fingerprint: string;
  /**
   * Under a business-key scope, where the fingerprint names the action by its
   * key alone: the fingerprint of the whole request it was claimed with, so a
   * later use of the key with other arguments is told apart (a conflict, not a
   * repeat). Null for every other scope: there the fingerprint is the whole request.
   */
  requestDigest: string | null;
  actor: string;
  tool: string;
  /** Transport session that created it, if any. */
  session: string | null;
  replay: ReplayClass;
  state: ExecutionState;
  createdAt: number;
  updatedAt: number;
  /** A matching call may attach to this execution until then. */
  attachUntil: number;
  dispatchedAt: number | null;
  /** dispatchedAt + the contract's timeout: past it, an unanswered dispatch is `unknown`. */
  deadlineAt: number | null;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  outcome: StoredOutcome | null;
  /** When the outcome was handed to a caller — separate from the outcome itself. */
  deliveredAt: number | null;
  /** Bounded and redacted; never raw secrets. */
  argumentsPreview: string;
  /** Operator note, denial reason. */
  note: string | null;
  /** The store's clock when this copy was read: compare leases and windows against this. */
  readAt: number;
}

export interface ClaimInput {
  id: string;
  fingerprint: string;
  /** See ExecutionRecord.requestDigest; omitted means null. */
  requestDigest?: string | null;
  actor: string;
  tool: string;
  session: string | null;
  replay: ReplayClass;
  /**
   * `dispatched` claims and marks the dispatch in one atomic step, for calls
   * with nothing (no approval) between the two: one write instead of two.
   */
  state: 'accepted' | 'awaiting_approval' | 'dispatched';
  /** Required with `state: 'dispatched'`: dispatchedAt = now, deadlineAt = now + this. */
  dispatchTimeoutMs?: number;
  attachWindowMs: number;
  /** The claimer's secret: only its holder may dispatch, complete, fail or release. */
  claimToken: string;
  leaseOwner: string;
  leaseMs: number;
  argumentsPreview: string;
}

export type ClaimResult =
  | { won: true; record: ExecutionRecord }
  /** Another execution holds this intent; `record` is it (undefined if it vanished meanwhile: try again). */
  | { won: false; record: ExecutionRecord | undefined };

export interface ClaimOptions {
  /**
   * The previous holder of this fingerprint, no longer attachable (window over,
   * or a deliberate repeat). It is retired in the same atomic step, and only if
   * it is still the active one — two racing replacers still yield one winner.
   */
  replacing?: string;
  events?: ActivityEventInput[];
}

/** A conditional state change: applied only if every condition holds, atomically. */
export interface TransitionInput {
  id: string;
  from: readonly ExecutionState[];
  to: ExecutionState;
  /** Condition: the caller holds this claim token. Omit for operator and sweeper actions. */
  token?: string;
  /**
   * Condition: the holder is gone, by the store's clock — its lease has expired
   * (or there is none), or the dispatch deadline has passed (see lease.ts).
   */
  requireStale?: boolean;
  /** New holder (token + lease); `null` clears token and lease; omitted leaves them. */
  holder?: { token: string; owner: string; leaseMs: number } | null;
  /** Marks the dispatch: dispatchedAt = now, deadlineAt = now + this. */
  dispatchTimeoutMs?: number;
  outcome?: StoredOutcome;
  /** Also records delivery (once): the outcome is being handed to its caller right now. */
  delivered?: boolean;
  /**
   * Retires the execution from matching (it stays listed): a call with its
   * fingerprint then claims a new one. For dispatches that provably never left.
   */
  release?: boolean;
  note?: string;
  events?: ActivityEventInput[];
}

export interface ExecutionFilter {
  state?: ExecutionState | readonly ExecutionState[];
  tool?: string;
  actor?: string;
  /** createdAt >= since */
  since?: number;
  limit?: number;
}

export interface SweepResult {
  /** Executions moved from dispatched (expired lease or deadline) to unknown. */
  expired: ExecutionRecord[];
  /** Finished executions deleted because their retention ended. */
  trimmed: number;
}

/**
 * The one interface every backend implements (memory, SQLite, PostgreSQL).
 * Every backend passes the same contract suite (src/store/store.contract.ts).
 *
 * Rules all implementations keep:
 * - the claim is atomic: of N concurrent claims for one fingerprint exactly one wins;
 * - every write is conditional (compare-and-set) and returns what it changed;
 * - journal events passed with a write are appended in the same transaction;
 * - times come from the store's clock, never the caller's;
 * - `accepted`, `awaiting_approval`, `authorized`, `dispatched` and `unknown`
 *   are never trimmed.
 */
export interface ExecutionStore extends JournalReader {
  readonly kind: 'memory' | 'sqlite' | 'postgres';

  claim(input: ClaimInput, options?: ClaimOptions): Promise<ClaimResult>;
  transition(input: TransitionInput): Promise<ExecutionRecord | undefined>;
  /** Extends the lease of the token holder; false if it no longer holds the execution. */
  renewLease(id: string, token: string, leaseMs: number): Promise<boolean>;
  /** Records delivery once (the first time); later calls change nothing. */
  markDelivered(id: string, events?: ActivityEventInput[]): Promise<void>;

  get(id: string): Promise<ExecutionRecord | undefined>;
  /** The execution a new call with this fingerprint would attach to, if any. */
  findActive(fingerprint: string): Promise<ExecutionRecord | undefined>;
  list(filter?: ExecutionFilter): Promise<ExecutionRecord[]>;

  /** Appends events that belong to no state change (`receipt_hit`, `id_reused`; session events to `sessions`). */
  appendEvents(events: ActivityEventInput[], stream?: JournalStream): Promise<void>;
  // readJournal and journalHead come from JournalReader (journal/reader.ts).
  /** Every activity entry of one execution, in order: its timeline. */
  journalFor(executionId: string): Promise<ActivityEntry[]>;

  /**
   * Sweeper: dispatched executions whose lease expired or whose deadline passed
   * become `unknown`; finished executions older than `retentionMs` are deleted.
   * With `dryRun`, reports what it would do and changes nothing.
   */
  sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult>;

  /** The store's clock. */
  now(): Promise<number>;
  close(): Promise<void>;
}
