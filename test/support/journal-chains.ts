import canonicalize from 'canonicalize';
import {
  chainGenesis,
  chainHash,
  entryBody,
  journalRowHash,
  rowEventsText,
} from '../../src/journal/chain.js';
import type { ActivityEntry, JournalStream } from '../../src/journal/events.js';
import type { StoredJournalRow } from '../../src/journal/verify-report.js';

/**
 * What is wrong with a journal as a store's readJournal returns it, checked
 * independently of the verifier: each chain links from its genesis, each
 * row's hash is its content's, times never go back within a chain, and
 * seqs rise. Chain 0 (a single-writer store) also runs 1, 2, 3, … without
 * gaps. An empty list is a valid journal. The events of a row of several
 * (docs/adr/0052: they share its prev_hash and hash) are checked as one row,
 * and must all be there.
 */
export function chainProblems(entries: ActivityEntry[], stream: JournalStream = 'activity'): string[] {
  const problems: string[] = [];
  const heads = new Map<number, { hash: string; at: number }>();
  let lastSeq = 0;
  let chain0 = 0;
  for (let i = 0; i < entries.length; ) {
    const entry = entries[i] as ActivityEntry;
    const row = entries.slice(i, i + (entry.rowEvents ?? 1));
    i += row.length;
    const last = row.at(-1) as ActivityEntry;
    const chain = entry.chain ?? 0;
    const head = heads.get(chain) ?? { hash: chainGenesis(stream, chain), at: 0 };
    for (const e of row) {
      if (e.seq <= lastSeq) problems.push(`seq ${e.seq} after ${lastSeq}`);
      if (chain === 0 && e.seq !== ++chain0) problems.push(`chain 0: seq ${e.seq}, expected ${chain0}`);
      if (e !== entry && (e.hash !== entry.hash || e.prevHash !== entry.prevHash || e.at !== entry.at))
        problems.push(`seq ${e.seq}: not of its row's chain place`);
      lastSeq = Math.max(lastSeq, e.seq);
    }
    if (entry.prevHash !== head.hash)
      problems.push(`seq ${entry.seq}: prev_hash is not chain ${chain}'s head`);
    const hash =
      entry.rowEvents === undefined
        ? chainHash(entry.prevHash, entryBody(entry))
        : journalRowHash(entry.prevHash, last.seq, entry.at, entry.rowEvents, rowEventsText(row));
    if (row.length !== (entry.rowEvents ?? 1)) problems.push(`seq ${entry.seq}: its row is cut short`);
    else if (entry.hash !== hash) problems.push(`seq ${last.seq}: hash`);
    if (entry.at < head.at) problems.push(`seq ${entry.seq}: at goes back in chain ${chain}`);
    heads.set(chain, { hash: entry.hash, at: entry.at });
  }
  return problems;
}

/**
 * The stored rows a store's readJournal entries come from, as the verifier reads them: a row of
 * several events (docs/adr/0052) once, with its events' text; one of the earlier format as it is.
 */
export function storedRows(entries: ActivityEntry[]): StoredJournalRow[] {
  const rows: StoredJournalRow[] = [];
  for (let i = 0; i < entries.length; ) {
    const entry = entries[i] as ActivityEntry;
    const row = entries.slice(i, i + (entry.rowEvents ?? 1));
    i += row.length;
    const { detail, rowEvents, ...columns } = entry;
    if (rowEvents === undefined) {
      rows.push({ ...columns, detailText: canonicalize(detail) as string });
      continue;
    }
    rows.push({
      seq: (row.at(-1) as ActivityEntry).seq,
      at: entry.at,
      kind: '',
      executionId: null,
      actor: null,
      tool: null,
      requestRef: null,
      detailText: rowEventsText(row),
      prevHash: entry.prevHash,
      hash: entry.hash,
      ...(entry.chain ? { chain: entry.chain } : {}),
      events: rowEvents,
    });
  }
  return rows;
}
