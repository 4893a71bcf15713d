import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { ActivityEventInput } from './events.js';

/**
 * The journal binds each stored outcome (the result a caller is replayed) by
 * its digest, so that `idem audit verify` can tell a forged or erased result
 * in the executions table from the one that was recorded. The digest is over
 * the outcome's RFC 8785 form: the same value stored as JSON text or jsonb,
 * in any key order, has one digest.
 */
export const OUTCOME_DIGEST_FIELD = 'outcomeSha256';

export function outcomeDigest(outcome: unknown): string {
  return hash('sha256', digestText(outcome), 'hex');
}

/**
 * RFC 8785 refuses some values a result may hold (a lone surrogate in a
 * string): those are digested as plain JSON text — which the stored text
 * parses back to the same — since storing an outcome must never fail here.
 */
function digestText(outcome: unknown): string {
  try {
    return canonicalize(outcome) ?? 'null';
  } catch {
    return JSON.stringify(outcome) ?? 'null';
  }
}

/** The digest of an outcome as stored (JSON text), or null for none. */
export function storedOutcomeDigest(text: string | null): string | null {
  return text === null ? null : outcomeDigest(JSON.parse(text));
}

/**
 * Events that record an outcome being stored: the target's answer, a status probe's, an operator's.
 * A journal older than digests recorded these without one.
 */
export function recordsOutcome(kind: string, state: unknown): boolean {
  return (
    kind === 'operator_resolution' || (kind === 'outcome' && (state === 'completed' || state === 'failed'))
  );
}

/**
 * An `unknown` outcome may store what the target answered all the same (its JSON-RPC error, kept
 * for whoever reviews it): that event carries the digest too, and only when something was stored.
 */
function mayRecordOutcome(kind: string, state: unknown): boolean {
  return recordsOutcome(kind, state) || (kind === 'outcome' && state === 'unknown');
}

/**
 * The events of a write that stores `outcome` for execution `id`, with the
 * outcome's digest added to the detail of the event(s) that record it. Every
 * store calls this in its transition, so the digest is of exactly what it
 * stores, in the same transaction.
 */
export function withOutcomeDigest(
  id: string,
  outcome: unknown,
  events: ActivityEventInput[] | undefined,
): ActivityEventInput[] | undefined {
  if (outcome === undefined || !events) return events;
  let digest: string | undefined;
  return events.map((event) => {
    if (event.executionId !== id || !mayRecordOutcome(event.kind, event.detail?.state ?? 'completed'))
      return event;
    digest ??= outcomeDigest(outcome);
    return { ...event, detail: { ...event.detail, [OUTCOME_DIGEST_FIELD]: digest } };
  });
}
