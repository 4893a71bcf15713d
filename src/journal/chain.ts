import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { ActivityEntry, ActivityEventInput } from './events.js';

/** prev_hash of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * The fields of an entry its hash covers besides `detail` (and `prevHash`,
 * which is chained in). `kind` is any string: a stored row is hashed as it is,
 * whether or not this version knows its kind.
 */
export interface HashedEnvelope {
  seq: number;
  at: number;
  kind: string;
  executionId: string | null;
  actor: string | null;
  tool: string | null;
  requestRef: string | null;
}

/**
 * The one definition of what an entry's hash covers — every store, the
 * offline verifier (and its workers) and the test tools that forge chains go
 * through here, so they cannot disagree:
 *
 *   hash = SHA-256(prev_hash ‖ "\n" ‖ envelope ‖ "\n" ‖ detail), hex
 *
 * The envelope has a fixed shape, so it is a JSON array in a fixed order (JSON
 * of strings, integers and null is already deterministic); only `detail`,
 * whose keys vary, goes through RFC 8785. `detailText` is that canonical text
 * as stored — the verifier hashes the bytes on disk, not what a parser made of
 * them. Changing any of this orphans every stored journal: chain.test.ts pins
 * it with known-answer vectors.
 */
export function journalEntryHash(prevHash: string, envelope: HashedEnvelope, detailText: string): string {
  return chainHash(prevHash, `${envelopeText(envelope)}\n${detailText}`);
}

/** The exact bytes an entry's hash covers after `prev_hash`: everything but the hash itself. */
export function entryBody(entry: Omit<ActivityEntry, 'hash' | 'prevHash'>): string {
  return `${envelopeText(entry)}\n${canonicalize(entry.detail) as string}`;
}

/** hash = SHA-256(prev_hash ‖ "\n" ‖ body), hex, where body is `entryBody(...)`. */
export function chainHash(prevHash: string, body: string): string {
  // One-shot hash(): a third of createHash()'s cost on rows this small, and verify hashes millions of them.
  return hash('sha256', `${prevHash}\n${body}`, 'hex');
}

function envelopeText(e: HashedEnvelope): string {
  return JSON.stringify([e.seq, e.at, e.kind, e.executionId, e.actor, e.tool, e.requestRef]);
}

/**
 * Builds the next entry of a chain whose head is (`seq`, `prevHash`), and the
 * canonical text of its detail — what stores keep, so that an offline
 * verifier hashes the stored bytes as they are. Used by every store.
 */
export function buildEntry(
  event: ActivityEventInput,
  seq: number,
  at: number,
  prevHash: string,
): { entry: ActivityEntry; detailText: string } {
  const detail = event.detail ?? {};
  const detailText = canonicalize(detail) as string;
  const partial = {
    seq,
    at,
    kind: event.kind,
    executionId: event.executionId ?? null,
    actor: event.actor ?? null,
    tool: event.tool ?? null,
    requestRef: event.requestRef ?? null,
    detail,
  };
  return {
    entry: { ...partial, prevHash, hash: journalEntryHash(prevHash, partial, detailText) },
    detailText,
  };
}

/** The next entry of a chain whose head is (`seq`, `prevHash`). */
export function nextEntry(
  event: ActivityEventInput,
  seq: number,
  at: number,
  prevHash: string,
): ActivityEntry {
  return buildEntry(event, seq, at, prevHash).entry;
}
