import type { ActivityEventInput } from '../journal/events.js';
import { type ExecutionState, LEGACY_ACCEPTED } from '../journal/states.js';

/**
 * Migration 8 of both SQL stores (docs/adr/0047; each backend's `legacy-accepted.ts` is its
 * step): the executions an older version left in `accepted` (claimed, never dispatched:
 * LEGACY_ACCEPTED) become `authorized`, the state that means the same now — nothing sent, safe
 * to dispatch once — holder and lease kept. While its lease runs the execution is in flight;
 * once it has lapsed, the next matching call takes it over and dispatches it once
 * (executions/take-over.ts), as it did an `accepted` one. The memory store starts empty and has
 * none.
 *
 * Each is journaled, in the migration's transaction, with an `authorized` event naming the
 * upgrade (no `by`: nobody decided it), so that the journal's fold (journal/rebuild.ts) says
 * `authorized` as the row does and `idem audit verify` — this version's or an older one's —
 * still agrees.
 */
export const UPGRADED_TO: ExecutionState = 'authorized';

/** The journal event of one execution the upgrade moved. */
export function upgradeEvent(row: { id: string; actor: string; tool: string }): ActivityEventInput {
  return {
    kind: 'authorized',
    executionId: row.id,
    actor: row.actor,
    tool: row.tool,
    detail: { from: LEGACY_ACCEPTED, via: 'store_upgrade' },
  };
}
