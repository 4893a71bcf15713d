import type { ActivityEventInput } from './events.js';

/**
 * What a retention trim removes is journaled, so that `idem audit verify` can
 * tell a trimmed execution from a deleted one: a sweep that deletes finished
 * executions appends `trimmed` events naming them, in the same transaction as
 * the delete. Every store's sweep calls trimmedEvents; every store's claim
 * calls withTrimJournaled, which marks the execution's `accepted` event — the
 * mark says "this execution's trim will be journaled", so verify requires a
 * `trimmed` event for a missing one only where the mark is, and journals
 * written before (no mark) keep verifying by the older rule (oldest first).
 */

/** The `trimmed` event's detail field that lists the execution ids removed. */
export const TRIMMED_IDS_FIELD = 'executions';

/** The `accepted` event's detail field that marks an execution whose trim is journaled. */
export const TRIM_JOURNALED_FIELD = 'trimJournaled';

/** Ids per `trimmed` event: a sweep removing more writes several, so no row grows without bound (~16 KB each). */
export const TRIMMED_PER_EVENT = 500;

/** The events a sweep appends for the executions it deleted (`ids`), in id (creation) order. */
export function trimmedEvents(ids: readonly string[], retentionMs: number): ActivityEventInput[] {
  const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const events: ActivityEventInput[] = [];
  for (let i = 0; i < sorted.length; i += TRIMMED_PER_EVENT) {
    events.push({
      kind: 'trimmed',
      detail: { [TRIMMED_IDS_FIELD]: sorted.slice(i, i + TRIMMED_PER_EVENT), retentionMs },
    });
  }
  return events;
}

/** A claim's events, with execution `id`'s `accepted` event marked (TRIM_JOURNALED_FIELD). */
export function withTrimJournaled(
  id: string,
  events: ActivityEventInput[] | undefined,
): ActivityEventInput[] | undefined {
  if (!events) return events;
  return events.map((event) =>
    event.kind === 'accepted' && event.executionId === id
      ? { ...event, detail: { ...event.detail, [TRIM_JOURNALED_FIELD]: true } }
      : event,
  );
}

/** The execution ids a `trimmed` event's detail names (none if it is malformed). */
export function trimmedIds(detail: Record<string, unknown>): string[] {
  const ids = detail[TRIMMED_IDS_FIELD];
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}
