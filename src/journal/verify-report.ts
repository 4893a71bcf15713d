import type { HashedEnvelope } from './chain.js';
import type { JournalStream } from './events.js';

// What `idem audit verify` reads (a stored row) and what it reports: the stable problem codes.

/**
 * A journal row exactly as stored: `detailText` is the stored JSON text of
 * `detail`, so the verifier hashes what is on disk, not what a parser made of it.
 */
export interface StoredJournalRow extends HashedEnvelope {
  detailText: string;
  prevHash: string;
  hash: string;
  /** The writer's chain (PostgreSQL); absent or 0 for the one chain of a single-writer store. */
  chain?: number;
  /**
   * A row of the one-row-per-transaction format (docs/adr/0052): how many events it
   * holds, `seq` being its last event's, and `detailText` the RFC 8785 text of its
   * events (chain.ts journalRowHash). Absent for a row of the earlier format (one event).
   */
  events?: number;
}

/** What is wrong with the first bad row. Stable: scripts switch on it. */
export type JournalProblem =
  /** The row's content no longer matches its hash: a field was changed. */
  | 'edited'
  /** A seq is missing: a row was deleted. */
  | 'missing'
  /** Rows are out of order, or a row's prev_hash names another predecessor. */
  | 'reordered'
  /** The journal ends before the signed head: rows were cut off the tail. */
  | 'truncated'
  /** The signed head's hash is not the journal's hash at that seq: the tail was rewritten and re-hashed. */
  | 'rehashed'
  /** The signed head's signature does not verify with the given public key. */
  | 'bad_signature'
  /** A public key is given but no signed head covers the journal: the heads were deleted or withheld. */
  | 'unsigned';

/** What is wrong with an execution row, checked against the journal (executions-check.ts). */
export type ExecutionProblem =
  /** The journal has the execution, the table does not, and no `trimmed` event names it (journal/trims.ts). */
  | 'execution_missing'
  /** The table has an execution the journal never recorded. */
  | 'unjournaled'
  /** The row's state is not the state the journal's events lead to. */
  | 'state_mismatch'
  /** The row's stored outcome is not the one whose digest the journal recorded. */
  | 'outcome_mismatch'
  | 'actor_mismatch'
  | 'tool_mismatch'
  /** The approval request's decision or decider is not the one the journal recorded (forged, or erased). */
  | 'approval_mismatch'
  /** The row's fingerprint is not the one its claim journaled: a retry would no longer find it. */
  | 'fingerprint_mismatch';

export interface VerifyReport {
  ok: boolean;
  /** Events checked (a row of the one-row-per-transaction format holds several). */
  entries: number;
  /** The highest seq checked, and its row's hash. */
  lastSeq: number;
  headHash: string;
  firstBad?: {
    seq: number;
    problem: JournalProblem | ExecutionProblem;
    message: string;
    /** Which journal the bad row is in (reports of a whole store). */
    stream?: JournalStream;
    /** Which writer's chain, when the journal has more than chain 0. */
    chain?: number;
    /** The bad execution, for a problem of the executions table. */
    executionId?: string;
  };
  /** The latest signed head checked against, if any. */
  signedHead?: { seq: number; verified: boolean };
  /** How many signed heads (local and shipped off the host) the chain was checked against. */
  signedHeads?: number;
  /** Each writer's chain, when the journal has chains besides chain 0 (PostgreSQL, docs/postgres.md). */
  chains?: ChainSummary[];
}

/** One chain's end as verify found it. */
export interface ChainSummary {
  chain: number;
  entries: number;
  lastSeq: number;
  headHash: string;
}
