import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { ActivityEntry, ActivityEventInput } from './events.js';

/** prev_hash of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * The canonical encoding an entry's hash covers: everything but the hash
 * itself, RFC 8785, so any store (and the offline verifier) computes the same
 * bytes from the same row.
 */
export function entryBody(entry: Omit<ActivityEntry, 'hash' | 'prevHash'>): string {
  return canonicalize({
    seq: entry.seq,
    at: entry.at,
    kind: entry.kind,
    execution_id: entry.executionId,
    actor: entry.actor,
    tool: entry.tool,
    request_ref: entry.requestRef,
    detail: entry.detail,
  }) as string;
}

/** hash = SHA-256(prev_hash ‖ "\n" ‖ canonical entry), hex. */
export function chainHash(prevHash: string, body: string): string {
  return createHash('sha256').update(prevHash).update('\n').update(body).digest('hex');
}

/** Builds the next entry of a chain whose head is (`seq`, `prevHash`). Used by every store. */
export function nextEntry(
  event: ActivityEventInput,
  seq: number,
  at: number,
  prevHash: string,
): ActivityEntry {
  const partial = {
    seq,
    at,
    kind: event.kind,
    executionId: event.executionId ?? null,
    actor: event.actor ?? null,
    tool: event.tool ?? null,
    requestRef: event.requestRef ?? null,
    detail: event.detail ?? {},
  };
  return { ...partial, prevHash, hash: chainHash(prevHash, entryBody(partial)) };
}
