import { join } from 'node:path';
import type { ExecutionStore } from '../store/types.js';
import { JOURNAL_STREAMS } from './events.js';
import {
  loadOrCreateSigningKey,
  readSignedHeads,
  SIGNED_HEAD_FILE,
  type SignedHead,
  signHead,
  writeSignedHeads,
} from './signing.js';

/**
 * Signs the current head of each journal with the data directory's Ed25519
 * key and keeps them in `<dataDir>/journal-head.json`. Heads that have not
 * moved are kept as they were, so a quiet gateway does not rewrite the file.
 * Rows appended after the last signature are protected by the chain alone.
 */
export async function signJournalHeads(
  store: ExecutionStore,
  dataDir: string,
  now = Date.now(),
): Promise<SignedHead[]> {
  const path = join(dataDir, SIGNED_HEAD_FILE);
  const previous = readSignedHeads(path);
  const { privateKeyPem } = loadOrCreateSigningKey(dataDir);
  const heads: SignedHead[] = [];
  let changed = false;
  for (const stream of JOURNAL_STREAMS) {
    const head = await store.journalHead(stream);
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
