import { join } from 'node:path';
import { JOURNAL_STREAMS } from './events.js';
import type { JournalReader } from './reader.js';
import {
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
 * Signs the current head of each journal and keeps them in
 * `<dataDir>/journal-head.json`. Heads that have not moved are kept as they
 * were, so a quiet gateway does not rewrite the file. Rows appended after the
 * last signature are protected by the chain alone.
 *
 * Heads only move forward: if a journal is now shorter than its last signed
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
    const head = await store.journalHead(stream);
    const last = previous.find((h) => h.stream === stream);
    if (last) await refuseRollback(store, last, head);
    if (!head) continue;
    const kept = previous.find((h) => h.stream === stream && h.seq === head.seq && h.hash === head.hash);
    if (kept) heads.push(kept);
    else {
      heads.push(signHead({ stream, seq: head.seq, hash: head.hash, signedAt: now }, privateKeyPem));
      changed = true;
    }
  }
  if (changed) writeSignedHeads(path, heads);
  return heads;
}

async function refuseRollback(
  store: JournalReader,
  last: SignedHead,
  head: { seq: number; hash: string } | undefined,
): Promise<void> {
  const what = `the ${last.stream} journal`;
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
