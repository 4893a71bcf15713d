import type { RowEvent } from './chain.js';
import type { ActivityKind } from './events.js';
import { OUTCOME_DIGEST_FIELD, recordsOutcome } from './outcome-digest.js';
import { stateAfter } from './rebuild.js';
import { type ExecutionState, isFinished } from './states.js';
import { TRIM_JOURNALED_FIELD, trimmedIds } from './trims.js';
import type { ExecutionProblem, StoredJournalRow } from './verify-report.js';

/** An execution row as verify reads it from the store (or an export): what the journal can vouch for. */
export interface StoredExecutionRow {
  id: string;
  actor: string;
  tool: string;
  state: string;
  updatedAt: number;
  /** SHA-256 of the stored outcome's RFC 8785 form (outcome-digest.ts), or null when there is none. */
  outcomeSha256: string | null;
  /** The stored fingerprint, decoded (absent in exports before they carried it). */
  fingerprint?: string;
  /** Its approval request's decision and decider, when it has a request (absent in exports before they carried it). */
  approval?: { decision: string | null; decidedBy: string | null };
}

/** One execution as the activity journal tells it. */
interface JournaledExecution {
  state: ExecutionState | undefined;
  /** Who claimed it and for which tool: the claim's `accepted` event. */
  actor: string | null;
  tool: string | null;
  /** Seq and time of its last state change. */
  seq: number;
  changedAt: number;
  /** The recorded outcome's digest; null: recorded by a journal older than digests; undefined: none recorded. */
  outcome: string | null | undefined;
  /** The fingerprint its claim journaled (`accepted`); undefined in journals before it was journaled. */
  fingerprint?: string;
  /** The approval decision journaled (`authorized`/`denied` with its `by`), if any. */
  decision?: { decision: string; by: string | undefined; seq: number };
  /** Its claim was journaled by a version that journals trims (journal/trims.ts): a missing row needs a `trimmed` event. */
  trimJournaled?: true;
  /** The seq of the `trimmed` event that names it, if one does. */
  trimmedAt?: number;
}

export interface ExecutionsReport {
  ok: boolean;
  /** Rows of the executions table checked. */
  checked: number;
  /** Executions the journal knows. */
  journaled: number;
  /** Finished executions absent from the table because a retention trim removed them. */
  trimmed: number;
  /**
   * Of `trimmed`, those claimed before trims were journaled: no `trimmed` event
   * names them, and they are accepted because they go oldest first.
   */
  trimmedUnrecorded: number;
  /** Stored outcomes matched against the digest the journal recorded. */
  outcomesChecked: number;
  /** Stored outcomes the journal recorded before it carried digests: their state is checked, their content cannot be. */
  outcomesUnchecked: number;
  firstBad?: { seq: number; executionId: string; problem: ExecutionProblem; message: string };
}

/**
 * A trimmed execution may finish up to this long after one still kept: the
 * journal's time of a change can trail the row's own by the wait for the
 * journal lock (PostgreSQL, several writers). On SQLite the two are equal.
 */
export const TRIM_ORDER_SLACK_MS = 1_000;

/** Every execution's state, claimer, last change and recorded outcome, from the activity journal alone. */
export async function journaledExecutions(
  rows: AsyncIterable<StoredJournalRow> | Iterable<StoredJournalRow>,
): Promise<Map<string, JournaledExecution>> {
  const executions = new Map<string, JournaledExecution>();
  const one = (row: StoredJournalRow) => {
    if (row.events === undefined) {
      apply(executions, row.seq, row.at, row.kind, row.executionId, row.actor, row.tool, row.detailText);
      return;
    }
    // A row of the one-row-per-transaction format: each of its events, seq−n+1 … seq.
    const events = JSON.parse(row.detailText) as RowEvent[];
    const first = row.seq - row.events + 1;
    for (let i = 0; i < events.length; i++) {
      const [kind, executionId, actor, tool, , detail] = events[i] as RowEvent;
      apply(executions, first + i, row.at, kind, executionId, actor, tool, JSON.stringify(detail));
    }
  };
  // A synchronous source (a SQLite file) is read without a promise per row, as verifyJournal does.
  if (Symbol.iterator in rows) for (const row of rows as Iterable<StoredJournalRow>) one(row);
  else for await (const row of rows) one(row);
  return executions;
}

/**
 * A journal row as far as the executions check reads it (a SQLite file,
 * sources.ts sqliteExecutionEvents): seq, at, kind, execution id, actor,
 * tool, and the detail text — which may be null where the kind's detail is
 * never read (DETAIL_KINDS).
 */
export type ExecutionEventRow = [
  seq: number,
  at: number,
  kind: string,
  executionId: string | null,
  actor: string | null,
  tool: string | null,
  detailText: string | null,
];

/** journaledExecutions over ExecutionEventRows: the same fold, without a row object per row. */
export function journaledExecutionsOf(rows: Iterable<ExecutionEventRow>): Map<string, JournaledExecution> {
  const executions = new Map<string, JournaledExecution>();
  for (const r of rows) apply(executions, r[0], r[1], r[2], r[3], r[4], r[5], r[6] as string);
  return executions;
}

/** The kinds whose detail the fold reads (needsDetail, and `trimmed`); the others' may be left unread. */
export const DETAIL_KINDS: readonly string[] = [
  'trimmed',
  'outcome',
  'operator_resolution',
  'authorized',
  'denied',
  'accepted',
];

function apply(
  executions: Map<string, JournaledExecution>,
  seq: number,
  at: number,
  kind: string,
  executionId: string | null,
  actor: string | null,
  tool: string | null,
  detailText: string,
): void {
  if (kind === 'trimmed') {
    // Names executions journaled before it; an id the journal never had is left to the table check.
    for (const id of trimmedIds(JSON.parse(detailText) as Record<string, unknown>)) {
      const known = executions.get(id);
      if (known) known.trimmedAt = seq;
    }
    return;
  }
  if (!executionId) return;
  let known = executions.get(executionId);
  if (!known) {
    known = {
      state: undefined,
      actor: null,
      tool: null,
      seq,
      changedAt: at,
      outcome: undefined,
    };
    executions.set(executionId, known);
  }
  // Only the kinds that carry what is checked (fingerprint, decision, outcome) need their detail parsed.
  const detail = needsDetail(kind) ? (JSON.parse(detailText) as Record<string, unknown>) : {};
  if (kind === 'accepted' && known.actor === null) {
    known.actor = actor;
    known.tool = tool;
    if (typeof detail.fingerprint === 'string') known.fingerprint = detail.fingerprint;
    if (detail[TRIM_JOURNALED_FIELD] === true) known.trimJournaled = true;
  }
  if (STATE_KINDS.has(kind)) {
    known.state = stateAfter({ kind: kind as ActivityKind, detail: detail as never }, known.state);
    known.seq = seq;
    known.changedAt = at;
  }
  // A denial by the channel's own check before sending (`refused`) is no approver's decision.
  if (kind === 'authorized' || (kind === 'denied' && detail.refused === undefined)) {
    const by = typeof detail.by === 'string' ? detail.by : undefined;
    const decision = kind === 'authorized' ? 'approved' : detail.via === 'expiry' ? 'expired' : 'denied';
    known.decision = { decision, by, seq };
  }
  const digest = detail[OUTCOME_DIGEST_FIELD];
  if (recordsOutcome(kind, detail.state)) known.outcome = typeof digest === 'string' ? digest : null;
  // An unknown outcome that stored what the target answered says so with its digest; one without stored nothing.
  else if (kind === 'outcome' && typeof digest === 'string') known.outcome = digest;
}

const STATE_KINDS: ReadonlySet<string> = new Set([
  'accepted',
  'awaiting_approval',
  'authorized',
  'dispatched',
  'upstream_task_resumed',
  'denied',
  'lease_expired',
  'outcome',
  'operator_resolution',
]);

function needsDetail(kind: string): boolean {
  return (
    kind === 'outcome' ||
    kind === 'operator_resolution' ||
    kind === 'authorized' ||
    kind === 'denied' ||
    kind === 'accepted'
  );
}

/**
 * Checks the executions table against the journal: each row must be an
 * execution the journal recorded, in the state its events lead to, claimed by
 * the same actor for the same tool, with the outcome whose digest was
 * journaled. Each execution the journal has must still be in the table —
 * except finished ones a retention trim removed: a `trimmed` event names
 * each (journal/trims.ts). One claimed before trims were journaled (its
 * `accepted` event lacks the mark) may be missing unnamed, as long as trims
 * went oldest first: missing while one that finished earlier is kept, it was
 * deleted. (`accepted`…`unknown` are never trimmed.)
 */
export async function checkExecutions(
  journal: Map<string, JournaledExecution>,
  rows: AsyncIterable<StoredExecutionRow> | Iterable<StoredExecutionRow>,
): Promise<ExecutionsReport> {
  const report: ExecutionsReport = {
    ok: true,
    checked: 0,
    journaled: [...journal.values()].filter((e) => e.state !== undefined).length,
    trimmed: 0,
    trimmedUnrecorded: 0,
    outcomesChecked: 0,
    outcomesUnchecked: 0,
  };
  const seen = new Set<string>();
  let oldestKeptFinish = Number.POSITIVE_INFINITY;
  let oldestKeptId: string | undefined;
  const fail = (seq: number, executionId: string, problem: ExecutionProblem, message: string) => ({
    ...report,
    ok: false,
    firstBad: { seq, executionId, problem, message },
  });
  for await (const row of rows) {
    report.checked++;
    seen.add(row.id);
    const known = journal.get(row.id);
    if (!known || known.state === undefined) {
      return fail(
        0,
        row.id,
        'unjournaled',
        `execution ${row.id} is in the table but the journal never recorded it`,
      );
    }
    if (row.state !== known.state) {
      return fail(
        known.seq,
        row.id,
        'state_mismatch',
        `execution ${row.id} is ${row.state} in the table; the journal's events (last at seq ${known.seq}) make it ${known.state}`,
      );
    }
    if (known.actor !== null && row.actor !== known.actor) {
      return fail(
        known.seq,
        row.id,
        'actor_mismatch',
        `execution ${row.id} names actor ${row.actor}; the journal recorded its claim by ${known.actor}`,
      );
    }
    if (known.tool !== null && row.tool !== known.tool) {
      return fail(
        known.seq,
        row.id,
        'tool_mismatch',
        `execution ${row.id} names tool ${row.tool}; the journal recorded its claim for ${known.tool}`,
      );
    }
    if (
      known.fingerprint !== undefined &&
      row.fingerprint !== undefined &&
      row.fingerprint !== known.fingerprint
    ) {
      return fail(
        known.seq,
        row.id,
        'fingerprint_mismatch',
        `execution ${row.id}'s fingerprint is not the one its claim journaled: a call is matched to an execution by its fingerprint, so a replaced one lets a retry dispatch again`,
      );
    }
    const approvalProblem = checkApproval(row, known);
    if (approvalProblem) {
      return fail(known.decision?.seq ?? known.seq, row.id, 'approval_mismatch', approvalProblem);
    }
    const outcomeProblem = checkOutcome(row, known);
    if (outcomeProblem) return fail(known.seq, row.id, 'outcome_mismatch', outcomeProblem);
    if (row.outcomeSha256 !== null) {
      if (known.outcome === null) report.outcomesUnchecked++;
      else report.outcomesChecked++;
    }
    if (isFinished(row.state) && row.updatedAt < oldestKeptFinish) {
      oldestKeptFinish = row.updatedAt;
      oldestKeptId = row.id;
    }
  }
  for (const [id, known] of journal) {
    if (seen.has(id) || known.state === undefined) continue;
    if (!isFinished(known.state)) {
      return fail(
        known.seq,
        id,
        'execution_missing',
        `execution ${id} (${known.state} in the journal) is not in the table; only finished executions are ever trimmed`,
      );
    }
    if (known.trimmedAt !== undefined) {
      report.trimmed++;
      continue;
    }
    if (known.trimJournaled) {
      return fail(
        known.seq,
        id,
        'execution_missing',
        `execution ${id} (${known.state} in the journal, last at seq ${known.seq}) is missing from the table and no trim recorded it: every retention trim journals the executions it deletes, so this row was deleted`,
      );
    }
    if (known.changedAt - TRIM_ORDER_SLACK_MS > oldestKeptFinish) {
      return fail(
        known.seq,
        id,
        'execution_missing',
        `execution ${id} (${known.state}, finished at ${known.changedAt}) is not in the table, yet ${oldestKeptId} which finished earlier (${oldestKeptFinish}) is: retention trims the oldest first, so it was deleted`,
      );
    }
    report.trimmed++;
    report.trimmedUnrecorded++;
  }
  return report;
}

function checkOutcome(row: StoredExecutionRow, known: JournaledExecution): string | undefined {
  if (known.outcome === undefined) {
    return row.outcomeSha256 === null
      ? undefined
      : `execution ${row.id} has a stored outcome, but the journal never recorded one`;
  }
  if (known.outcome === null) return undefined;
  if (row.outcomeSha256 === null)
    return `execution ${row.id}'s stored outcome was erased; the journal recorded one (sha256 ${known.outcome})`;
  if (row.outcomeSha256 !== known.outcome)
    return `execution ${row.id}'s stored outcome is not the one the journal recorded (sha256 ${known.outcome}, stored ${row.outcomeSha256})`;
  return undefined;
}

/**
 * The approval request's decision must be the journaled one: the request row
 * is what `idem approvals show` and the console name as the decider, and an
 * erased decision makes an approved execution look pending again.
 */
function checkApproval(row: StoredExecutionRow, known: JournaledExecution): string | undefined {
  const stored = row.approval;
  if (!stored) return undefined;
  const journaled = known.decision;
  if (!journaled) {
    return stored.decision === null
      ? undefined
      : `execution ${row.id}'s approval request records a decision (${stored.decision} by ${stored.decidedBy}) the journal never recorded`;
  }
  const said = `the journal recorded ${journaled.decision}${journaled.by ? ` by ${journaled.by}` : ''} at seq ${journaled.seq}`;
  if (stored.decision === null) {
    return `execution ${row.id}'s approval decision was erased: its request shows undecided; ${said}`;
  }
  if (stored.decision !== journaled.decision) {
    return `execution ${row.id}'s approval request records ${stored.decision}; ${said}`;
  }
  if (journaled.by !== undefined && stored.decidedBy !== journaled.by) {
    return `execution ${row.id}'s approval request names ${stored.decidedBy} as the decider; ${said}`;
  }
  return undefined;
}
