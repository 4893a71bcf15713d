import canonicalize from 'canonicalize';
import { GENESIS_HASH, type HashedEnvelope, journalEntryHash } from './chain.js';
import type { JournalStream } from './events.js';
import { type SignedHead, verifySignedHead } from './signing.js';

/**
 * A journal row exactly as stored: `detailText` is the stored JSON text of
 * `detail`, so the verifier hashes what is on disk, not what a parser made of it.
 */
export interface StoredJournalRow extends HashedEnvelope {
  detailText: string;
  prevHash: string;
  hash: string;
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
  /** The journal has the execution, the table does not, and no retention trim explains it. */
  | 'execution_missing'
  /** The table has an execution the journal never recorded. */
  | 'unjournaled'
  /** The row's state is not the state the journal's events lead to. */
  | 'state_mismatch'
  /** The row's stored outcome is not the one whose digest the journal recorded. */
  | 'outcome_mismatch'
  | 'actor_mismatch'
  | 'tool_mismatch';

export interface VerifyReport {
  ok: boolean;
  /** Rows checked. */
  entries: number;
  lastSeq: number;
  headHash: string;
  firstBad?: {
    seq: number;
    problem: JournalProblem | ExecutionProblem;
    message: string;
    /** Which journal the bad row is in (reports of a whole store). */
    stream?: JournalStream;
    /** The bad execution, for a problem of the executions table. */
    executionId?: string;
  };
  /** The latest signed head checked against, if any. */
  signedHead?: { seq: number; verified: boolean };
  /** How many signed heads (local and shipped off the host) the chain was checked against. */
  signedHeads?: number;
}

export interface SignedHeadOptions {
  /** One head (callers that have just one); with `signedHeads`, all are checked. */
  signedHead?: SignedHead;
  /** Every head known for this stream (local, and shipped off the host): each must match the chain. */
  signedHeads?: SignedHead[];
  publicKeyPem?: string;
  /** Fail when no signed head covers a non-empty journal (a public key is in use). */
  requireSignedHead?: boolean;
}

/** The heads of `options`, highest seq last. */
export function headsOf(options: SignedHeadOptions): SignedHead[] {
  const heads = [...(options.signedHeads ?? []), ...(options.signedHead ? [options.signedHead] : [])];
  return heads.sort((a, b) => a.seq - b.seq || a.signedAt - b.signedAt);
}

/**
 * Checks a journal offline: hash chain, seq continuity and order, and (if one
 * is given) the signed head. Needs neither the gateway nor the fingerprint
 * key. Names the first bad seq and what is wrong with it.
 */
export async function verifyJournal(
  rows: AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow>,
  options: SignedHeadOptions & { onProgress?: (entries: number) => void } = {},
): Promise<VerifyReport> {
  let expectedSeq = 1;
  let prevHash = GENESIS_HASH;
  let entries = 0;
  const fail = (seq: number, problem: JournalProblem, message: string): VerifyReport => ({
    ok: false,
    entries,
    lastSeq: expectedSeq - 1,
    headHash: prevHash,
    firstBad: { seq, problem, message },
  });
  const signedSeqs = new Set(headsOf(options).map((h) => h.seq));
  const signedHashesSeen = new Map<number, string>();

  // A seq that jumps ahead is either a deleted row or a row moved later: the
  // next row tells which, so the decision waits one row.
  let gapAt: number | undefined;
  /** Checks one row; returns a failed report, or undefined to go on. */
  const check = (row: StoredJournalRow): VerifyReport | undefined => {
    entries++;
    if (gapAt !== undefined) {
      if (row.seq === gapAt) return fail(gapAt, 'reordered', `seq ${gapAt} appears after seq ${gapAt + 1}`);
      return fail(gapAt, 'missing', `seq ${gapAt} is missing`);
    }
    if (row.seq !== expectedSeq) {
      if (row.seq > expectedSeq) {
        gapAt = expectedSeq;
        return undefined;
      }
      return fail(row.seq, 'reordered', `seq ${row.seq} appears after seq ${expectedSeq - 1}`);
    }
    if (row.prevHash !== prevHash) {
      return fail(row.seq, 'reordered', `seq ${row.seq}: prev_hash does not name seq ${row.seq - 1}'s hash`);
    }
    if (!hashMatches(row)) {
      return fail(row.seq, 'edited', `seq ${row.seq}: content does not match its hash`);
    }
    if (signedSeqs.size > 0 && signedSeqs.has(row.seq)) signedHashesSeen.set(row.seq, row.hash);
    prevHash = row.hash;
    expectedSeq++;
    if (options.onProgress && (entries & 0xffff) === 0) options.onProgress(entries);
    return undefined;
  };
  // A synchronous source (a SQLite file) is read without a promise per row: that alone is a third of the time.
  if (Symbol.iterator in rows) {
    for (const row of rows as Iterable<StoredJournalRow>) {
      const failed = check(row);
      if (failed) return failed;
    }
  } else {
    for await (const row of rows) {
      const failed = check(row);
      if (failed) return failed;
    }
  }
  options.onProgress?.(entries);
  if (gapAt !== undefined) return fail(gapAt, 'missing', `seq ${gapAt} is missing`);

  return withSignedHead({ entries, lastSeq: expectedSeq - 1, headHash: prevHash, signedHashesSeen }, options);
}

/**
 * An intact chain, checked against every signed head known for it: a forged
 * signature, truncation (the chain ends before a head), re-hashing (the hash
 * at a head's seq is not the signed one), and — with `requireSignedHead` —
 * a non-empty chain no head covers at all.
 */
export function withSignedHead(
  chain: { entries: number; lastSeq: number; headHash: string; signedHashesSeen: Map<number, string> },
  options: SignedHeadOptions,
): VerifyReport {
  const { entries, lastSeq, headHash } = chain;
  const report: VerifyReport = { ok: true, entries, lastSeq, headHash };
  const heads = headsOf(options);
  const bad = (seq: number, problem: JournalProblem, message: string): VerifyReport => ({
    ...report,
    ok: false,
    firstBad: { seq, problem, message },
  });
  if (heads.length === 0) {
    if (options.requireSignedHead && lastSeq > 0) {
      return bad(
        1,
        'unsigned',
        `no signed head covers this journal (${lastSeq} rows), yet a public key is given: the heads were deleted or withheld. Verify against heads kept off the host (--heads)`,
      );
    }
    return report;
  }
  const latest = heads.at(-1) as SignedHead;
  const pem = options.publicKeyPem;
  report.signedHead = { seq: latest.seq, verified: pem !== undefined };
  report.signedHeads = heads.length;
  if (pem) {
    const forged = heads.find((h) => !verifySignedHead(h, pem));
    if (forged) {
      report.signedHead = { seq: latest.seq, verified: false };
      return bad(
        forged.seq,
        'bad_signature',
        `the signed head at seq ${forged.seq} does not verify with the given public key`,
      );
    }
  }
  if (latest.seq > lastSeq) {
    return bad(
      lastSeq + 1,
      'truncated',
      `the journal ends at seq ${lastSeq}; a signed head is at seq ${latest.seq}`,
    );
  }
  const rewritten = heads.find((h) => chain.signedHashesSeen.get(h.seq) !== h.hash);
  if (rewritten) {
    return bad(
      rewritten.seq,
      'rehashed',
      `seq ${rewritten.seq}: hash differs from the signed head's — rows up to it were rewritten and re-hashed`,
    );
  }
  return report;
}

/**
 * Whether a stored row's hash is the hash of its content (journalEntryHash).
 * Fast path: the stored detail text is already canonical (as Idem writes it);
 * else canonicalize it first.
 */
export function hashMatches(row: StoredJournalRow): boolean {
  if (journalEntryHash(row.prevHash, row, row.detailText) === row.hash) return true;
  let canonical: string | undefined;
  try {
    canonical = canonicalize(JSON.parse(row.detailText)) as string | undefined;
  } catch {
    return false;
  }
  return (
    canonical !== undefined &&
    canonical !== row.detailText &&
    journalEntryHash(row.prevHash, row, canonical) === row.hash
  );
}
