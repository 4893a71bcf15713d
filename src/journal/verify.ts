import canonicalize from 'canonicalize';
import { chainHash, GENESIS_HASH } from './chain.js';
import { type SignedHead, verifySignedHead } from './signing.js';

/**
 * A journal row exactly as stored: `detailText` is the stored JSON text of
 * `detail`, so the verifier hashes what is on disk, not what a parser made of it.
 */
export interface StoredJournalRow {
  seq: number;
  at: number;
  kind: string;
  executionId: string | null;
  actor: string | null;
  tool: string | null;
  requestRef: string | null;
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
  | 'bad_signature';

export interface VerifyReport {
  ok: boolean;
  /** Rows checked. */
  entries: number;
  lastSeq: number;
  headHash: string;
  firstBad?: { seq: number; problem: JournalProblem; message: string };
  /** The signed head checked against, if any. */
  signedHead?: { seq: number; verified: boolean };
}

/**
 * Checks a journal offline: hash chain, seq continuity and order, and (if one
 * is given) the signed head. Needs neither the gateway nor the fingerprint
 * key. Names the first bad seq and what is wrong with it.
 */
export async function verifyJournal(
  rows: AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow>,
  options: { signedHead?: SignedHead; publicKeyPem?: string; onProgress?: (entries: number) => void } = {},
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
  const signed = options.signedHead;
  let signedHashSeen: string | undefined;

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
    if (signed && row.seq === signed.seq) signedHashSeen = row.hash;
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

  return withSignedHead({ entries, lastSeq: expectedSeq - 1, headHash: prevHash, signedHashSeen }, options);
}

/** An intact chain, checked against the signed head (if any): truncation, re-hashing, a forged signature. */
export function withSignedHead(
  chain: { entries: number; lastSeq: number; headHash: string; signedHashSeen: string | undefined },
  options: { signedHead?: SignedHead; publicKeyPem?: string },
): VerifyReport {
  const { entries, lastSeq, headHash } = chain;
  const report: VerifyReport = { ok: true, entries, lastSeq, headHash };
  const signed = options.signedHead;
  if (!signed) return report;
  const bad = (seq: number, problem: JournalProblem, message: string): VerifyReport => ({
    ok: false,
    entries,
    lastSeq,
    headHash,
    firstBad: { seq, problem, message },
    signedHead: report.signedHead,
  });
  const verified = options.publicKeyPem ? verifySignedHead(signed, options.publicKeyPem) : false;
  report.signedHead = { seq: signed.seq, verified };
  if (options.publicKeyPem && !verified) {
    return bad(
      signed.seq,
      'bad_signature',
      `the signed head at seq ${signed.seq} does not verify with the given public key`,
    );
  }
  if (signed.seq > lastSeq) {
    return bad(
      lastSeq + 1,
      'truncated',
      `the journal ends at seq ${lastSeq}; the signed head is at seq ${signed.seq}`,
    );
  }
  if (chain.signedHashSeen !== signed.hash) {
    return bad(
      signed.seq,
      'rehashed',
      `seq ${signed.seq}: hash differs from the signed head's — rows up to it were rewritten and re-hashed`,
    );
  }
  return report;
}

/** Fast path: the stored detail text is already canonical (as Idem writes it); else canonicalize it first. */
export function hashMatches(row: StoredJournalRow): boolean {
  const envelope = JSON.stringify([
    row.seq,
    row.at,
    row.kind,
    row.executionId,
    row.actor,
    row.tool,
    row.requestRef,
  ]);
  if (chainHash(row.prevHash, `${envelope}\n${row.detailText}`) === row.hash) return true;
  let canonical: string | undefined;
  try {
    canonical = canonicalize(JSON.parse(row.detailText)) as string | undefined;
  } catch {
    return false;
  }
  return (
    canonical !== undefined &&
    canonical !== row.detailText &&
    chainHash(row.prevHash, `${envelope}\n${canonical}`) === row.hash
  );
}
