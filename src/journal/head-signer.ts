import { join } from 'node:path';
import { JOURNAL_STREAMS, type JournalStream } from './events.js';
import type { JournalReader } from './reader.js';
import {
  chainOf,
  loadOrCreateSigningKey,
  readSignedHeads,
  SIGNED_HEAD_FILE,
  type SignedHead,
  signHead,
  writeSignedHeads,
} from './signing.js';

export interface SignOptions {
  /** signedAt of new heads. Default: now. */
  now?: number;
  /** The private key's file, when it is not in the data directory (see signingKeyPaths). */
  keyFile?: string;
}

/**
 * Signs the current head of each journal — of each writer's chain, where the
 * store has several (PostgreSQL) — and keeps them in
 * `<dataDir>/journal-head.json`. Heads that have not moved are kept as they
 * were, so a quiet gateway does not rewrite the file. Rows appended after the
 * last signature are protected by the chain alone.
 *
 * Heads only move forward: if a chain is now shorter than its last signed
 * head, or its row at that head's seq has another hash, it was truncated or
 * rewritten — signing it would launder the tampering, so this refuses.
 */
export async function signJournalHeads(
  store: JournalReader,
  dataDir: string,
  options: SignOptions | number = {},
): Promise<SignedHead[]> {
  const { now = Date.now(), keyFile } = typeof options === 'number' ? { now: options } : options;
  const path = join(dataDir, SIGNED_HEAD_FILE);
  const previous = readSignedHeads(path);
  const { privateKeyPem } = loadOrCreateSigningKey(dataDir, keyFile);
  const heads: SignedHead[] = [];
  let changed = false;
  for (const stream of JOURNAL_STREAMS) {
    const current = await chainHeads(store, stream);
    const chains = new Set([...current.keys(), ...previous.filter((h) => h.stream === stream).map(chainOf)]);
    for (const chain of [...chains].sort((a, b) => a - b)) {
      const head = current.get(chain);
      const same = (h: SignedHead) => h.stream === stream && chainOf(h) === chain;
      const last = previous.filter(same).at(-1);
      if (last) await refuseRollback(store, last, head);
      if (!head) continue;
      const kept = previous.find((h) => same(h) && h.seq === head.seq && h.hash === head.hash);
      if (kept) heads.push(kept);
      else {
        const signed = { stream, ...(chain ? { chain } : {}), seq: head.seq, hash: head.hash, signedAt: now };
        heads.push(signHead(signed, privateKeyPem));
        changed = true;
      }
    }
  }
  if (changed) writeSignedHeads(path, heads);
  return heads;
}

/** Each chain's head (seq > 0) of one stream: the writers' chains, or chain 0 for a single-writer store. */
async function chainHeads(
  store: JournalReader,
  stream: JournalStream,
): Promise<Map<number, { seq: number; hash: string }>> {
  if (store.journalChains) {
    const chains = await store.journalChains(stream);
    return new Map(chains.map((c) => [c.chain, { seq: c.seq, hash: c.hash }]));
  }
  const head = await store.journalHead(stream);
  return new Map(head ? [[0, head]] : []);
}

async function refuseRollback(
  store: JournalReader,
  last: SignedHead,
  head: { seq: number; hash: string } | undefined,
): Promise<void> {
  const what = `the ${last.stream} journal${last.chain ? ` (chain ${last.chain})` : ''}`;
  if (!head || head.seq < last.seq) {
    throw new Error(
      `${what} ends at seq ${head?.seq ?? 0}, before its last signed head (seq ${last.seq}): it was truncated. Not signing; run \`idem audit verify\``,
    );
  }
  const [row] = await store.readJournal(last.seq - 1, 1, last.stream);
  if (row?.seq !== last.seq || row.hash !== last.hash) {
    throw new Error(
      `${what} at seq ${last.seq} no longer has the signed hash: it was rewritten. Not signing; run \`idem audit verify\``,
    );
  }
}
