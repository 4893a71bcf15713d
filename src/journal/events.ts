import type { JsonValue } from '../identity/canonical.js';

/**
 * One event in the activity journal (docs/operators.md#audit). Stores append these in the
 * same transaction as the state change they describe.
 */
export const ACTIVITY_KINDS = [
  'received',
  'receipt_hit',
  'attached',
  'accepted',
  'awaiting_approval',
  'authorized',
  'denied',
  'dispatched',
  'outcome',
  'delivered',
  'id_reused',
  'lease_expired',
  'operator_resolution',
  /** A deliberate repeat: on the new execution `{repeat_of}`, on the repeated one `{repeated_by}` (or `{released}`). */
  'repeat',
  /**
   * An operator started a new store where a lost one was (`idem store new`): `{by, reason?,
   * lostHeads, keptAs}` — the old store's signed seqs and where its heads were kept.
   */
  'store_started_anew',
  /**
   * A sweep deleted finished executions past their retention: `{executions: [ids], retentionMs}`,
   * at most TRIMMED_PER_EVENT ids per event (journal/trims.ts). No executionId: it names several.
   */
  'trimmed',
  /** A client's task opened on an execution: `{taskId, generation, ttlMs}` (journal/task-events.ts). */
  'task_created',
  /** The first tasks/cancel of a task: `{taskId, before}`, `before` naming what it came ahead of. */
  'task_cancel',
  /**
   * A dispatched task's target asked for input (`{asked: [keys]}`, by the holder), or its
   * client answered some of it (`{taskId, answered: [keys]}`): the keys only, never what was asked or answered.
   */
  'task_input',
  /** The target answered with a task of its own, or it changed status: `{generation, upstream, upstreamTaskId, status?}`. */
  'upstream_task',
  /**
   * The holder following an upstream's task was lost, and another (this or another gateway) took the
   * execution over to follow the same task again, nothing re-sent: `{generation, upstream,
   * upstreamTaskId, from, owner}`, `from` the state it was taken over in. Its state is `dispatched`.
   */
  'upstream_task_resumed',
] as const;

/**
 * Agent runs (docs/operators.md#audit "sessions" stream): start (client info, actor, protocol revision), end,
 * and each restart of one of the run's upstreams (whatever state it held is gone).
 */
export const SESSION_KINDS = ['session_start', 'session_end', 'upstream_restart'] as const;

export type ActivityKind = (typeof ACTIVITY_KINDS)[number] | (typeof SESSION_KINDS)[number];

/** The two hash-chained journals: one row per event of a call or execution, one per agent run event. */
export const JOURNAL_STREAMS = ['activity', 'sessions'] as const;
export type JournalStream = (typeof JOURNAL_STREAMS)[number];

export interface ActivityEventInput {
  kind: ActivityKind;
  executionId?: string | null;
  actor?: string | null;
  tool?: string | null;
  /** Request key or rendered id that carried the event, when there was one. */
  requestRef?: string | null;
  /** Small, already-redacted facts (state, code, who). Never raw arguments or secrets. */
  detail?: Record<string, JsonValue>;
}

/** A journal row as stored: the event plus its place in the hash chain. */
export interface ActivityEntry {
  seq: number;
  at: number;
  kind: ActivityKind;
  executionId: string | null;
  actor: string | null;
  tool: string | null;
  requestRef: string | null;
  detail: Record<string, JsonValue>;
  prevHash: string;
  hash: string;
  /** The writer's chain (PostgreSQL: one per store handle and concurrent write); absent for chain 0. */
  chain?: number;
  /**
   * How many events its row holds, for an event of a row of the one-row-per-transaction
   * format (docs/adr/0052): `prevHash` and `hash` are then the row's, shared by its events.
   * Absent for a row of the earlier format, which holds one event.
   */
  rowEvents?: number;
}
