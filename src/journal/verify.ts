import canonicalize from 'canonicalize';
import { chainGenesis, GENESIS_HASH, type HashedEnvelope, journalEntryHash } from './chain.js';
import type { JournalStream } from './events.js';
import { chainOf, type SignedHead, verifySignedHead } from './signing.js';

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
  | 'tool_mismatch'
  /** The approval request's decision or decider is not the one the journal recorded (forged, or erased). */
  | 'approval_mismatch'
  /** The row's fingerprint is not the one its claim journaled: a retry would no longer find it. */
  | 'fingerprint_mismatch';

export interface VerifyReport {
  ok: boolean;
  /** Rows checked. */
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

interface ChainState {
  entries: number;
  lastSeq: number;
  prevHash: string;
}

/**
 * Checks a journal offline: hash chains, seq continuity and order, and the
 * signed and registered heads. Needs neither the gateway nor the fingerprint
 * key. Names the first bad seq and what is wrong with it.
 *
 * Chain 0 (a single-writer store, and PostgreSQL journals before v4) runs
 * seq 1, 2, 3, … without gaps. A writer's chain (chain ≥ 1) takes its seqs
 * from the stream's one sequence, so its seqs rise but skip the other
 * chains' (and a rolled-back transaction's): there, a deleted row shows as a
 * prev_hash that names no row before it, and a moved one as a prev_hash that
 * names a row after it. Rows come in seq order (PostgreSQL) or stored order
 * (an export); either way a row whose seq is not above every seq before it is
 * out of order.
 */
export async function verifyJournal(
  rows: AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow>,
  options: SignedHeadOptions & { onProgress?: (entries: number) => void } = {},
): Promise<VerifyReport> {
  const stream = options.stream ?? 'activity';
  // Chain 0: contiguous seqs.
  let expectedSeq = 1;
  let prevHash = GENESIS_HASH;
  const writers = new Map<number, ChainState>();
  let entries = 0;
  let lastSeq = 0;
  let headHash = GENESIS_HASH;
  const fail = (seq: number, problem: JournalProblem, message: string, chain = 0): VerifyReport => ({
    ok: false,
    entries,
    lastSeq,
    headHash,
    firstBad: { seq, problem, message, ...(chain ? { chain } : {}) },
  });
  const registry = options.registry ?? [];
  const checkedSeqs = new Set([...headsOf(options), ...registry].map((h) => h.seq));
  const signedHashesSeen = new Map<number, string>();

  // A seq that jumps ahead is either a deleted row or a row moved later: the
  // next row tells which, so the decision waits one row.
  let gapAt: number | undefined;
  // A writer's row whose prev_hash names no row seen: deleted predecessor, or one
  // moved later — the rest of the scan tells which.
  let broken: { seq: number; chain: number; wanted: string } | undefined;
  const accept = (row: StoredJournalRow) => {
    if (checkedSeqs.size > 0 && checkedSeqs.has(row.seq)) signedHashesSeen.set(row.seq, row.hash);
    if (row.seq > lastSeq) {
      lastSeq = row.seq;
      headHash = row.hash;
    }
    if (options.onProgress && (entries & 0xffff) === 0) options.onProgress(entries);
  };
  /** Checks one row; returns a failed report, or undefined to go on. */
  const check = (row: StoredJournalRow): VerifyReport | undefined => {
    entries++;
    const chain = row.chain ?? 0;
    if (broken) {
      if (chain === broken.chain && row.hash === broken.wanted) {
        return fail(
          broken.seq,
          'reordered',
          `seq ${broken.seq}: its predecessor in chain ${chain} comes after it (seq ${row.seq})`,
          chain,
        );
      }
      return undefined;
    }
    if (gapAt !== undefined) {
      if (row.seq === gapAt) return fail(gapAt, 'reordered', `seq ${gapAt} appears after seq ${gapAt + 1}`);
      return fail(gapAt, 'missing', `seq ${gapAt} is missing`);
    }
    if (chain !== 0) return checkWriterRow(row, chain);
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
      return fail(row.seq, 'edited', editedMessage(row, `seq ${row.seq}`));
    }
    prevHash = row.hash;
    expectedSeq++;
    accept(row);
    return undefined;
  };
  const checkWriterRow = (row: StoredJournalRow, chain: number): VerifyReport | undefined => {
    if (row.seq <= lastSeq) {
      return fail(row.seq, 'reordered', `seq ${row.seq} appears after seq ${lastSeq}`, chain);
    }
    let state = writers.get(chain);
    if (!state) {
      state = { entries: 0, lastSeq: 0, prevHash: chainGenesis(stream, chain) };
      writers.set(chain, state);
    }
    if (row.prevHash !== state.prevHash) {
      broken = { seq: row.seq, chain, wanted: row.prevHash };
      return undefined;
    }
    if (!hashMatches(row)) {
      return fail(row.seq, 'edited', editedMessage(row, `seq ${row.seq} (chain ${chain})`), chain);
    }
    state.entries++;
    state.lastSeq = row.seq;
    state.prevHash = row.hash;
    accept(row);
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
  if (broken) {
    return fail(
      broken.seq,
      'missing',
      `seq ${broken.seq} (chain ${broken.chain}): prev_hash names no row of its chain — the row before it was deleted`,
      broken.chain,
    );
  }

  const heads = headsOf(options);
  const chainIds = new Set([...writers.keys(), ...heads.map(chainOf), ...registry.map((r) => r.chain)]);
  chainIds.delete(0);
  const chain0 = {
    entries: entries - [...writers.values()].reduce((n, w) => n + w.entries, 0),
    lastSeq: expectedSeq - 1,
    headHash: prevHash,
  };
  if (chainIds.size === 0) {
    return withSignedHead({ ...chain0, signedHashesSeen }, { ...options, registry });
  }

  // Several chains: each against its own heads; "unsigned" is the stream's (a chain
  // started after the last signing is covered by the chain alone until the next).
  const summaries: ChainSummary[] = [];
  if (chain0.entries > 0 || heads.some((h) => chainOf(h) === 0) || registry.some((r) => r.chain === 0)) {
    summaries.push({ chain: 0, ...chain0 });
  }
  for (const chain of [...chainIds].sort((a, b) => a - b)) {
    const w = writers.get(chain);
    summaries.push({
      chain,
      entries: w?.entries ?? 0,
      lastSeq: w?.lastSeq ?? 0,
      headHash: w?.prevHash ?? chainGenesis(stream, chain),
    });
  }
  const total: VerifyReport = { ok: true, entries, lastSeq, headHash, chains: summaries };
  if (heads.length === 0 && options.requireSignedHead && entries > 0) {
    return unsignedReport(total);
  }
  for (const summary of summaries) {
    const one = withSignedHead(
      { ...summary, signedHashesSeen },
      {
        signedHeads: heads.filter((h) => chainOf(h) === summary.chain),
        registry: registry.filter((r) => r.chain === summary.chain),
        ...(options.publicKeyPem ? { publicKeyPem: options.publicKeyPem } : {}),
      },
    );
    if (one.firstBad) {
      return {
        ...total,
        ok: false,
        firstBad: { ...one.firstBad, ...(summary.chain ? { chain: summary.chain } : {}) },
      };
    }
  }
  if (heads.length > 0) {
    const latest = heads.at(-1) as SignedHead;
    total.signedHead = { seq: latest.seq, verified: options.publicKeyPem !== undefined };
    total.signedHeads = heads.length;
  }
  return total;
}

function unsignedReport(report: VerifyReport): VerifyReport {
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

/**
 * Whether a stored row's hash is the hash of its content (journalEntryHash),
 * over the stored bytes as they are. Every store writes detail in its
 * canonical (RFC 8785) form, so a detail in any other spelling was edited,
 * even when it parses to the same value: a whitespace edit, or a duplicated
 * key — which SQLite's json_extract reads first, and a JSON parser last.
 */
export function hashMatches(row: StoredJournalRow): boolean {
  return journalEntryHash(row.prevHash, row, row.detailText) === row.hash;
}

/** Why an edited row fails: a non-canonical detail is named as such, so the operator knows what to look at. */
function editedMessage(row: StoredJournalRow, where: string): string {
  let canonical: string | undefined;
  try {
    canonical = canonicalize(JSON.parse(row.detailText)) as string | undefined;
  } catch {
    return `${where}: its stored detail is not JSON — it was edited`;
  }
  if (canonical !== row.detailText) {
    return `${where}: its stored detail is not in canonical form (RFC 8785, as Idem writes it) — it was edited (extra whitespace, a reordered or duplicated key)`;
  }
  return `${where}: content does not match its hash`;
}
