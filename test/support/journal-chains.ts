import { chainGenesis, chainHash, entryBody } from '../../src/journal/chain.js';
import type { ActivityEntry, JournalStream } from '../../src/journal/events.js';

/**
 * What is wrong with a journal as a store's readJournal returns it, checked
 * independently of the verifier: each chain links from its genesis, each
 * entry's hash is its content's, times never go back within a chain, and
 * seqs rise. Chain 0 (a single-writer store) also runs 1, 2, 3, … without
 * gaps. An empty list is a valid journal.
 */
export function chainProblems(entries: ActivityEntry[], stream: JournalStream = 'activity'): string[] {
  const problems: string[] = [];
  const heads = new Map<number, { hash: string; at: number }>();
  let lastSeq = 0;
  let chain0 = 0;
  for (const entry of entries) {
    const chain = entry.chain ?? 0;
    const head = heads.get(chain) ?? { hash: chainGenesis(stream, chain), at: 0 };
    if (entry.seq <= lastSeq) problems.push(`seq ${entry.seq} after ${lastSeq}`);
    if (chain === 0 && entry.seq !== ++chain0) problems.push(`chain 0: seq ${entry.seq}, expected ${chain0}`);
    if (entry.prevHash !== head.hash)
      problems.push(`seq ${entry.seq}: prev_hash is not chain ${chain}'s head`);
    if (entry.hash !== chainHash(entry.prevHash, entryBody(entry))) problems.push(`seq ${entry.seq}: hash`);
    if (entry.at < head.at) problems.push(`seq ${entry.seq}: at goes back in chain ${chain}`);
    heads.set(chain, { hash: entry.hash, at: entry.at });
    lastSeq = Math.max(lastSeq, entry.seq);
  }
  return problems;
}
