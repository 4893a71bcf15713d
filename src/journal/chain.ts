import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { ActivityEntry, ActivityEventInput } from './events.js';

/** prev_hash of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * The exact bytes an entry's hash covers: everything but the hash itself. The
 * envelope has a fixed shape, so it is a JSON array in a fixed order (JSON of
 * strings, integers and null is already deterministic); only `detail`, whose
 * keys vary, goes through RFC 8785. Every store and the offline verifier call
 * this one function, so they cannot disagree.
 */
export function entryBody(entry: Omit<ActivityEntry, 'hash' | 'prevHash'>): string {
  const envelope = JSON.stringify([
    entry.seq,
    entry.at,
    entry.kind,
    entry.executionId,
    entry.actor,
    entry.tool,
    entry.requestRef,
  ]);
  return `${envelope}\n${canonicalize(entry.detail) as string}`;
}

/** hash = SHA-256(prev_hash ‖ "\n" ‖ canonical entry), hex. */
export function chainHash(prevHash: string, body: string): string {
  // One-shot hash(): a third of createHash()'s cost on rows this small, and verify hashes millions of them.
  return hash('sha256', `${prevHash}\n${body}`, 'hex');
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
  const envelope = JSON.stringify([
    seq,
    at,
    partial.kind,
    partial.executionId,
    partial.actor,
    partial.tool,
    partial.requestRef,
  ]);
  return {
    entry: { ...partial, prevHash, hash: chainHash(prevHash, `${envelope}\n${detailText}`) },
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
