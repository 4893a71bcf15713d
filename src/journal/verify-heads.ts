import type { JournalStream } from './events.js';
import { type SignedHead, verifySignedHead } from './signing.js';
import type { JournalProblem, VerifyReport } from './verify-report.js';

// The end of an intact chain against the heads that pin it: signed heads and the store's registry.

/** A chain's end as the store itself records it (PostgreSQL's journal_head): a head without a signature. */
export interface RegisteredHead {
  chain: number;
  seq: number;
  hash: string;
}

export interface SignedHeadOptions {
  /** One head (callers that have just one); with `signedHeads`, all are checked. */
  signedHead?: SignedHead;
  /** Every head known for this stream (local, and shipped off the host): each must match its chain. */
  signedHeads?: SignedHead[];
  publicKeyPem?: string;
  /** Fail when no signed head covers a non-empty journal (a public key is in use). */
  requireSignedHead?: boolean;
  /**
   * The store's own record of each chain's end, read BEFORE the rows: every
   * chain must reach its registered head with that hash, so cutting rows off a
   * chain's tail (or a whole chain) shows even without signed heads, unless the
   * registry was rewritten too — which the signed heads catch.
   */
  registry?: RegisteredHead[];
  /** The stream the rows are of: a chain's genesis depends on it. Default: activity. */
  stream?: JournalStream;
}

/** The heads of `options`, highest seq last. */
export function headsOf(options: SignedHeadOptions): SignedHead[] {
  const heads = [...(options.signedHeads ?? []), ...(options.signedHead ? [options.signedHead] : [])];
  return heads.sort((a, b) => a.seq - b.seq || a.signedAt - b.signedAt);
}

export function unsignedReport(report: VerifyReport): VerifyReport {
  return {
    ...report,
    ok: false,
    firstBad: {
      seq: 1,
      problem: 'unsigned',
      message: `no signed head covers this journal (${report.entries} rows), yet a public key is given: the heads were deleted or withheld. Verify against heads kept off the host (--heads)`,
    },
  };
}

/**
 * An intact chain, checked against every signed head known for it: a forged
 * signature, truncation (the chain ends before a head), re-hashing (the hash
 * at a head's seq is not the signed one), and — with `requireSignedHead` —
 * a non-empty chain no head covers at all. The store's registered heads
 * (`registry`) are checked the same way, without signatures.
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
  if (heads.length === 0 && options.requireSignedHead && lastSeq > 0) return unsignedReport(report);
  const pem = options.publicKeyPem;
  if (heads.length > 0) {
    const latest = heads.at(-1) as SignedHead;
    report.signedHead = { seq: latest.seq, verified: pem !== undefined };
    report.signedHeads = heads.length;
  }
  if (pem) {
    const forged = heads.find((h) => !verifySignedHead(h, pem));
    if (forged) {
      report.signedHead = { seq: heads.at(-1)?.seq ?? forged.seq, verified: false };
      return bad(
        forged.seq,
        'bad_signature',
        `the signed head at seq ${forged.seq} does not verify with the given public key`,
      );
    }
  }
  const covering = [
    ...heads.map((h) => ({ seq: h.seq, hash: h.hash, what: 'a signed head' })),
    ...(options.registry ?? []).map((r) => ({
      seq: r.seq,
      hash: r.hash,
      what: "the store's registered head",
    })),
  ].filter((h) => h.seq > 0);
  const furthest = covering.reduce<(typeof covering)[number] | undefined>(
    (a, h) => (a === undefined || h.seq > a.seq ? h : a),
    undefined,
  );
  if (furthest && furthest.seq > lastSeq) {
    return bad(
      lastSeq + 1,
      'truncated',
      `the journal ends at seq ${lastSeq}; ${furthest.what} is at seq ${furthest.seq}`,
    );
  }
  const rewritten = covering.find((h) => chain.signedHashesSeen.get(h.seq) !== h.hash);
  if (rewritten) {
    return bad(
      rewritten.seq,
      'rehashed',
      `seq ${rewritten.seq}: hash differs from ${rewritten.what}'s — rows up to it were rewritten and re-hashed`,
    );
  }
  return report;
}
