import canonicalize from 'canonicalize';
import { chainGenesis, GENESIS_HASH, journalEntryHash, journalRowHash } from './chain.js';
import { chainOf, type SignedHead } from './signing.js';
import { headsOf, type SignedHeadOptions, unsignedReport, withSignedHead } from './verify-heads.js';
import type { ChainSummary, JournalProblem, StoredJournalRow, VerifyReport } from './verify-report.js';

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
    // A row of the one-row-per-transaction format holds events seq−n+1 … seq; one of the earlier, seq alone.
    const events = row.events ?? 1;
    if (!(Number.isSafeInteger(events) && events >= 1)) {
      return fail(
        row.seq,
        'edited',
        `seq ${row.seq}: its count of events (${events}) is not a count — it was edited`,
      );
    }
    const first = row.seq - events + 1;
    entries += events;
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
      if (first <= gapAt && gapAt <= row.seq)
        return fail(gapAt, 'reordered', `seq ${gapAt} appears after seq ${gapAt + 1}`);
      return fail(gapAt, 'missing', `seq ${gapAt} is missing`);
    }
    if (chain !== 0) return checkWriterRow(row, chain, events);
    if (first !== expectedSeq) {
      if (first > expectedSeq) {
        gapAt = expectedSeq;
        return undefined;
      }
      return fail(row.seq, 'reordered', `seq ${first} appears after seq ${expectedSeq - 1}`);
    }
    if (row.prevHash !== prevHash) {
      return fail(row.seq, 'reordered', `seq ${row.seq}: prev_hash does not name seq ${first - 1}'s hash`);
    }
    if (!hashMatches(row)) {
      return fail(row.seq, 'edited', editedMessage(row, rowName(row)));
    }
    prevHash = row.hash;
    expectedSeq = row.seq + 1;
    accept(row);
    return undefined;
  };
  const checkWriterRow = (row: StoredJournalRow, chain: number, events: number): VerifyReport | undefined => {
    if (row.seq - events + 1 <= lastSeq) {
      return fail(row.seq, 'reordered', `seq ${row.seq - events + 1} appears after seq ${lastSeq}`, chain);
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
      return fail(row.seq, 'edited', editedMessage(row, `${rowName(row)} (chain ${chain})`), chain);
    }
    state.entries += events;
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

/**
 * Whether a stored row's hash is the hash of its content (journalEntryHash),
 * over the stored bytes as they are. Every store writes detail in its
 * canonical (RFC 8785) form, so a detail in any other spelling was edited,
 * even when it parses to the same value: a whitespace edit, or a duplicated
 * key — which SQLite's json_extract reads first, and a JSON parser last.
 */
export function hashMatches(row: StoredJournalRow): boolean {
  if (row.events !== undefined) {
    return (
      emptyEnvelope(row) &&
      journalRowHash(row.prevHash, row.seq, row.at, row.events, row.detailText) === row.hash
    );
  }
  return journalEntryHash(row.prevHash, row, row.detailText) === row.hash;
}

/**
 * A row of several events keeps its events' envelopes in its events, and its own columns empty
 * (kind '', the rest NULL): its hash does not cover them, so anything else there was put there.
 */
function emptyEnvelope(row: StoredJournalRow): boolean {
  return (
    row.kind === '' &&
    row.executionId === null &&
    row.actor === null &&
    row.tool === null &&
    row.requestRef === null
  );
}

/** How a report names a row: its seq, and for a row of several events the seqs of all of them. */
function rowName(row: StoredJournalRow): string {
  if (row.events === undefined || row.events === 1) return `seq ${row.seq}`;
  return `seq ${row.seq} (the row of events ${row.seq - row.events + 1}–${row.seq})`;
}

/** Why an edited row fails: a non-canonical detail is named as such, so the operator knows what to look at. */
function editedMessage(row: StoredJournalRow, where: string): string {
  if (row.events !== undefined && !emptyEnvelope(row)) {
    return `${where}: a column outside its events (kind, execution_id, actor, tool, request_ref) was filled in — it was edited`;
  }
  const what = row.events === undefined ? 'detail is' : 'events are';
  let canonical: string | undefined;
  try {
    canonical = canonicalize(JSON.parse(row.detailText)) as string | undefined;
  } catch {
    return `${where}: its stored ${what} not JSON — it was edited`;
  }
  if (canonical !== row.detailText) {
    return `${where}: its stored ${what} not in canonical form (RFC 8785, as Idem writes it) — it was edited (extra whitespace, a reordered or duplicated key)`;
  }
  return `${where}: content does not match its hash`;
}
