import type { ReplayClass } from '../contracts/contract.js';
import { rowEntries } from '../journal/chain.js';
import type { ActivityEntry, ActivityKind } from '../journal/events.js';
import type { ExecutionState } from '../journal/states.js';
import { keptUpstreamTask } from './tasks.js';
import type {
  ApprovalChannel,
  ApprovalDecision,
  ApprovalRequest,
  ApprovalRequestPolicy,
  ExecutionRecord,
  TaskInput,
  TaskRecord,
  TaskWatch,
  UpstreamTaskHandle,
} from './types.js';

/**
 * An execution state as an SQL literal. Typed, so the SQL of both stores names only states that
 * exist: every state in their statements is spelled through here, never typed into the text
 * (state-sets.test.ts holds them to it; the shipped migrations keep theirs).
 */
export function sqlState(state: ExecutionState): string {
  return `'${state}'`;
}

/** A set of states (journal/states.ts) as the list of an SQL `IN (…)`. */
export function sqlStates(states: readonly ExecutionState[]): string {
  return states.map(sqlState).join(', ');
}

/**
 * An execution row as both SQL stores lay it out (snake_case columns,
 * times in ms, outcome as JSON text); each store adds its own fingerprint
 * encoding (of `fingerprint` and `request_digest`) and bookkeeping columns.
 */
export interface ExecutionColumns {
  id: string;
  actor: string;
  tool: string;
  session: string | null;
  replay: ReplayClass;
  state: ExecutionState;
  created_at: number;
  updated_at: number;
  attach_until: number;
  dispatched_at: number | null;
  deadline_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  outcome: string | null;
  delivered_at: number | null;
  arguments_preview: string;
  note: string | null;
  /** JSON text (upstreamTaskColumn), in both stores. */
  upstream_task: string | null;
}

export function recordFromColumns(
  row: ExecutionColumns,
  fingerprint: string,
  requestDigest: string | null,
  readAt: number,
): ExecutionRecord {
  return {
    id: row.id,
    fingerprint,
    requestDigest,
    actor: row.actor,
    tool: row.tool,
    session: row.session,
    replay: row.replay,
    state: row.state,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    attachUntil: row.attach_until,
    dispatchedAt: row.dispatched_at,
    deadlineAt: row.deadline_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    outcome: row.outcome === null ? null : JSON.parse(row.outcome),
    deliveredAt: row.delivered_at,
    argumentsPreview: row.arguments_preview,
    note: row.note,
    upstreamTask: upstreamTaskColumn.decode(row.upstream_task),
    readAt,
  };
}

/**
 * The upstream's task handle as both SQL stores keep it: JSON text. Text in PostgreSQL too
 * (not jsonb, which refuses \u0000 and lone surrogates): the upstream chooses its task id.
 */
export const upstreamTaskColumn = {
  encode(handle: UpstreamTaskHandle): string {
    return JSON.stringify(keptUpstreamTask(handle));
  },
  decode(text: string | null): UpstreamTaskHandle | null {
    return text === null ? null : keptUpstreamTask(JSON.parse(text) as UpstreamTaskHandle);
  },
};

/** A task row as both SQL stores lay it out. */
export interface TaskColumns {
  task_id: string;
  execution_id: string;
  actor: string;
  generation: 'v1' | 'v2';
  created_at: number;
  ttl_ms: number | null;
  poll_interval_ms: number;
  cancel_requested_at: number | null;
}

export function taskFromColumns(row: TaskColumns): TaskRecord {
  return {
    taskId: row.task_id,
    executionId: row.execution_id,
    actor: row.actor,
    generation: row.generation,
    createdAt: row.created_at,
    ttlMs: row.ttl_ms,
    pollIntervalMs: row.poll_interval_ms,
    cancelRequestedAt: row.cancel_requested_at,
  };
}

/**
 * A task's columns as a query joining it to its execution selects them (`t` the task): the
 * two names both tables have are renamed, so neither overwrites the other in the row.
 */
export const TASK_JOIN_COLUMNS = `t.task_id, t.execution_id, t.actor AS task_actor, t.generation,
  t.created_at AS task_created_at, t.ttl_ms, t.poll_interval_ms, t.cancel_requested_at`;

export interface TaskJoinColumns extends Omit<TaskColumns, 'actor' | 'created_at'> {
  task_actor: string;
  task_created_at: number;
}

export function taskFromJoin(row: TaskJoinColumns): TaskRecord {
  return taskFromColumns({ ...row, actor: row.task_actor, created_at: row.task_created_at });
}

/** A journal row as both SQL stores keep it: detail as the canonical JSON text its hash covers. */
export interface JournalColumns {
  seq: number;
  at: number;
  kind: ActivityKind;
  execution_id: string | null;
  actor: string | null;
  tool: string | null;
  request_ref: string | null;
  detail: string;
  prev_hash: string;
  hash: string;
  /** PostgreSQL: the writer's chain (0 for rows from before chains). SQLite has one chain and no column. */
  chain?: number;
  /**
   * SQLite from migration 9: how many events a row of the one-row-per-transaction format holds
   * (`detail` then holds their RFC 8785 text, `seq` is its last event's); NULL for a row of one event.
   */
  events?: number | null;
}

/** The entries a reader sees of a journal row: its one event, or each event of a row of several. */
export function entriesFromColumns(row: JournalColumns): ActivityEntry[] {
  if (row.events == null) return [entryFromColumns(row)];
  return rowEntries(
    {
      seq: row.seq,
      at: row.at,
      events: row.events,
      eventsText: row.detail,
      prevHash: row.prev_hash,
      hash: row.hash,
    },
    row.chain,
  );
}

export function entryFromColumns(row: JournalColumns): ActivityEntry {
  return {
    seq: row.seq,
    at: row.at,
    kind: row.kind,
    executionId: row.execution_id,
    actor: row.actor,
    tool: row.tool,
    requestRef: row.request_ref,
    detail: JSON.parse(row.detail),
    prevHash: row.prev_hash,
    hash: row.hash,
    ...(row.chain ? { chain: row.chain } : {}),
  };
}

/** An approval request as both SQL stores keep it. */
export interface ApprovalColumns {
  execution_id: string;
  policy: ApprovalRequestPolicy;
  channel: string;
  target: string;
  credential_ref: string | null;
  earlier: string | null;
  requested_at: number;
  expires_at: number;
  decision: ApprovalDecision | null;
  decided_by: string | null;
  decided_via: ApprovalChannel | null;
  decided_at: number | null;
  reason: string | null;
}

export function approvalFromColumns(row: ApprovalColumns): ApprovalRequest {
  return {
    executionId: row.execution_id,
    policy: row.policy,
    channel: row.channel,
    target: row.target,
    credentialRef: row.credential_ref,
    earlier: row.earlier,
    requestedAt: Number(row.requested_at),
    expiresAt: Number(row.expires_at),
    decision: row.decision,
    decidedBy: row.decided_by,
    decidedVia: row.decided_via,
    decidedAt: row.decided_at === null ? null : Number(row.decided_at),
    reason: row.reason,
  };
}

/**
 * A task's input (TaskInput) as both SQL stores keep it: JSON text, NULL for none. Text in
 * PostgreSQL too, for the same reason as the upstream task: the target writes its keys.
 */
export const taskInputColumn = {
  encode(input: TaskInput): string {
    return JSON.stringify({ requests: input.requests, answers: input.answers, askedAt: input.askedAt });
  },
  decode(column: string | null): TaskInput | null {
    return column === null ? null : (JSON.parse(column) as TaskInput);
  },
};

/** What ExecutionStore.watchTask reads of an execution, in both SQL stores. */
export interface TaskWatchColumns {
  state: string;
  task_input: string | null;
  cancel_requested_at: number | null;
}

/** The watch as a store answers it: an execution's input shows only while it is dispatched. */
export function taskWatchFromColumns(row: TaskWatchColumns): TaskWatch {
  return {
    cancelRequestedAt: row.cancel_requested_at,
    input: row.state === 'dispatched' ? taskInputColumn.decode(row.task_input) : null,
  };
}
