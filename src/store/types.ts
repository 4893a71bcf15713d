import type { ReplayClass } from '../contracts/contract.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../journal/events.js';
import type { JournalReader } from '../journal/reader.js';
import type { ExecutionState } from '../journal/states.js';
import type { ExecutionCountFilter, ExecutionFilter } from './execution-filter.js';
import type { StoredOutcome } from './outcome.js';

export type { ExecutionCountFilter, ExecutionFilter } from './execution-filter.js';

/**
 * One execution: one accepted attempt to perform one intended action.
 * Times are milliseconds since the epoch by the *store's* clock.
 */
export interface ExecutionRecord {
  /** `exe_` + ULID. Also the target's idempotency key. */
  id: string;
  /** Intent fingerprint (keyed digest of the canonical action record). */
  fingerprint: string;
  /**
   * Under a business-key scope, where the fingerprint names the action by its
   * key alone: the fingerprint of the whole request it was claimed with, so a
   * later use of the key with other arguments is told apart (a conflict, not a
   * repeat). Null for every other scope: there the fingerprint is the whole request.
   */
  requestDigest: string | null;
  actor: string;
  tool: string;
  /** Transport session that created it, if any. */
  session: string | null;
  replay: ReplayClass;
  state: ExecutionState;
  createdAt: number;
  updatedAt: number;
  /** A matching call may attach to this execution until then. */
  attachUntil: number;
  dispatchedAt: number | null;
  /** dispatchedAt + the contract's timeout: past it, an unanswered dispatch is `unknown`. */
  deadlineAt: number | null;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  outcome: StoredOutcome | null;
  /** When the outcome was handed to a caller — separate from the outcome itself. */
  deliveredAt: number | null;
  /** Bounded and redacted; never raw secrets. */
  argumentsPreview: string;
  /** Operator note, denial reason. */
  note: string | null;
  /** The target answered with a task of its own, which the holder follows (null unless set: setUpstreamTask). */
  upstreamTask: UpstreamTaskHandle | null;
  /** The store's clock when this copy was read: compare leases and windows against this. */
  readAt: number;
}

/**
 * A client's task on an execution (MCP tasks): a random id that maps to one execution and one actor, one row
 * per (execution, actor). What the task shows is derived from the execution; the row keeps only what is the
 * task's own. Trimmed with its execution. Times are the store's clock.
 */
export interface TaskRecord {
  /** `tsk_` + 32 random bytes base64url: unguessable, never a secret (every lookup also compares the actor). */
  taskId: string;
  executionId: string;
  actor: string;
  /** Which wire the client asked in: v1 the 2025-11-25 experimental tasks, v2 the 2026-07-28 extension. */
  generation: 'v1' | 'v2';
  createdAt: number;
  ttlMs: number | null;
  pollIntervalMs: number;
  /** When tasks/cancel first arrived; set once, never moved. */
  cancelRequestedAt: number | null;
}

export interface OpenTaskInput {
  taskId: string;
  executionId: string;
  actor: string;
  generation: 'v1' | 'v2';
  ttlMs: number | null;
  pollIntervalMs: number;
}

/** One thing a task's target asked for before it acts (2026-07-28 `inputRequests[key]`). */
export interface TaskInputRequest {
  method: string;
  params?: unknown;
}

/**
 * The input a dispatched task's target asked for, kept on its execution so that any process can
 * show it (tasks/get) and take its client's answers (tasks/update), and the holder (whichever
 * process dispatched it) reads them back. Cleared by the holder once it has taken the answers.
 */
export interface TaskInput {
  /** What the target asked, by key. */
  requests: Record<string, TaskInputRequest>;
  /** The client's answers so far, by key: only keys asked, each taken once. */
  answers: Record<string, unknown>;
  /** When the holder recorded the request (the store's clock). */
  askedAt: number;
}

/** A write only the holder of a dispatched execution (its claim token) makes: false, and nothing written, for anyone else. */
export type HolderWrite<T> = (
  id: string,
  token: string,
  value: T,
  events?: ActivityEventInput[],
) => Promise<boolean>;

/** What the holder of a task's dispatch watches for (ExecutionStore.watchTask). */
export interface TaskWatch {
  /** The first tasks/cancel of any of the execution's tasks; null if none. */
  cancelRequestedAt: number | null;
  /** The input its target asked for, while the execution is dispatched; null if none is open. */
  input: TaskInput | null;
}

/** The upstream's own task an execution's holder follows; kept on the execution, so another process can resume following it. */
export interface UpstreamTaskHandle {
  generation: 'v1' | 'v2';
  /** The upstream's name (config). */
  upstream: string;
  /** The upstream's task id: never shown to a client. */
  taskId: string;
  /** What the upstream asked for, when it did. */
  pollIntervalMs?: number;
  /** When Idem learned of it (the caller's reading of the store clock). */
  createdAt: number;
}

export interface ClaimInput {
  id: string;
  fingerprint: string;
  /** See ExecutionRecord.requestDigest; omitted means null. */
  requestDigest?: string | null;
  actor: string;
  tool: string;
  session: string | null;
  replay: ReplayClass;
  /**
   * `dispatched` claims and marks the dispatch in one atomic step, for calls
   * with nothing (no approval) between the two: one write instead of two.
   */
  state: 'accepted' | 'awaiting_approval' | 'dispatched';
  /** Required with `state: 'dispatched'`: dispatchedAt = now, deadlineAt = now + this. */
  dispatchTimeoutMs?: number;
  attachWindowMs: number;
  /** The claimer's secret: only its holder may dispatch, complete, fail or release. */
  claimToken: string;
  leaseOwner: string;
  leaseMs: number;
  argumentsPreview: string;
  /**
   * With `state: 'awaiting_approval'`: the approval request, written in the same
   * atomic step as the claim, so no execution waits without one (see ApprovalRequest).
   */
  approval?: ApprovalRequestInput;
}

/** Which policy of the authorization ladder (docs/approvals.md) asked for the approval (contracts' ApprovalPolicy minus `none`). */
export type ApprovalRequestPolicy = 'every_call' | 'session';

/** How an approval request ended: a human said yes or no, or nobody answered in time. */
export type ApprovalDecision = 'approved' | 'denied' | 'expired';

/** Through what a decision came (journaled with it): the operator CLI, MCP elicitation to the client's human, the web console, a program using the library, or the clock. */
export const APPROVAL_CHANNELS = ['cli', 'elicitation', 'console', 'api', 'expiry'] as const;
export type ApprovalChannel = (typeof APPROVAL_CHANNELS)[number];

export interface ApprovalRequestInput {
  policy: ApprovalRequestPolicy;
  /** Dispatch channel and target of the action (upstream name for MCP tools). */
  channel: string;
  target: string;
  /** The credential's *name* (never its value); null when the action uses none. */
  credentialRef: string | null;
  /** An earlier execution of the same intent (the one this claim replaced), if any. */
  earlier: string | null;
  /** Undecided this long (by the store's clock) → denied as `expired`. */
  expiresInMs: number;
}

/**
 * What an approver is asked about one execution in `awaiting_approval`, and how it was decided. Kept by the
 * store beside the execution (and trimmed with it); the execution's own fields (tool, actor, session,
 * preview, fingerprint) complete the picture.
 */
export interface ApprovalRequest {
  executionId: string;
  policy: ApprovalRequestPolicy;
  channel: string;
  target: string;
  credentialRef: string | null;
  earlier: string | null;
  requestedAt: number;
  expiresAt: number;
  decision: ApprovalDecision | null;
  decidedBy: string | null;
  decidedVia: ApprovalChannel | null;
  decidedAt: number | null;
  /** Why it was denied (`expired` for an expiry); the approver's note for an approval. */
  reason: string | null;
}

/**
 * One decision on an approval request, applied atomically with one conditional update: the execution must
 * still be `awaiting_approval` and its request undecided, and — for `approved` and `denied` — not yet
 * expired; for `expired`, past its expiry. Approved → `authorized` with no holder (the next caller of the
 * intent dispatches it, once); denied or expired → `denied` with the reason as its note. An approval under
 * the `session` policy also approves the execution's (actor, session, tool) in the same step.
 */
export interface DecideApprovalInput {
  id: string;
  decision: ApprovalDecision;
  by: string;
  via: ApprovalChannel;
  reason?: string;
  events?: ActivityEventInput[];
}

export type DecideApprovalResult =
  | { decided: true; record: ExecutionRecord; approval: ApprovalRequest }
  /** Someone else decided first, it expired, or there is no such request: here is how things stand. */
  | { decided: false; record: ExecutionRecord | undefined; approval: ApprovalRequest | undefined };

export interface ApprovalFilter {
  /** Only undecided requests (whatever their expiry: the caller compares with the store's clock). */
  pending?: boolean;
  limit?: number;
}

export type ClaimResult =
  | { won: true; record: ExecutionRecord }
  /** Another execution holds this intent; `record` is it (undefined if it vanished meanwhile: try again). */
  | { won: false; record: ExecutionRecord | undefined };

export interface ClaimOptions {
  /**
   * The previous holder of this fingerprint, no longer attachable (window over,
   * or a deliberate repeat). It is retired in the same atomic step, and only if
   * it is still the active one — two racing replacers still yield one winner.
   */
  replacing?: string;
  events?: ActivityEventInput[];
}

/** A conditional state change: applied only if every condition holds, atomically. */
export interface TransitionInput {
  id: string;
  from: readonly ExecutionState[];
  to: ExecutionState;
  /** Condition: the caller holds this claim token. Omit for operator and sweeper actions. */
  token?: string;
  /**
   * Condition: the holder is gone, by the store's clock — its lease has expired
   * (or there is none), or the dispatch deadline has passed (see lease.ts).
   */
  requireStale?: boolean;
  /**
   * Condition: the lease still ends when the caller read that it did (null: no lease) — nobody
   * renewed it or took the execution over since. With a past time and a new holder, of any number
   * of processes taking over the same lapsed holder, one wins (executions/resume.ts).
   */
  leaseExpiresAt?: number | null;
  /** New holder (token + lease); `null` clears token and lease; omitted leaves them. */
  holder?: { token: string; owner: string; leaseMs: number } | null;
  /** Marks the dispatch: dispatchedAt = now, deadlineAt = now + this. */
  dispatchTimeoutMs?: number;
  outcome?: StoredOutcome;
  /** Also records delivery (once): the outcome is being handed to its caller right now. */
  delivered?: boolean;
  /**
   * Retires the execution from matching (it stays listed): a call with its
   * fingerprint then claims a new one. For dispatches that provably never left.
   */
  release?: boolean;
  note?: string;
  events?: ActivityEventInput[];
  /** Nobody waits for it (lifecycle.md step 11; only where soleReader()): may wait to share the next commit. */
  deferrable?: boolean;
}

/** One state's executions (ExecutionStore.countStates): how many, and the earliest updatedAt of them (null: none). */
export type StateCount = { state: ExecutionState; count: number; oldestUpdatedAt: number | null };

export interface SweepResult {
  /** Executions moved from dispatched (expired lease or deadline) to unknown. */
  expired: ExecutionRecord[];
  /** Finished executions deleted because their retention ended. */
  trimmed: number;
}

/**
 * The one interface every backend implements (memory, SQLite, PostgreSQL).
 * Every backend passes the same contract suite (the feature files of src/store/contract/, each run on every backend).
 *
 * Rules all implementations keep:
 * - the claim is atomic: of N concurrent claims for one fingerprint exactly one wins;
 * - every write is conditional (compare-and-set) and returns what it changed;
 * - journal events passed with a write are appended in the same transaction;
 * - times come from the store's clock, never the caller's;
 * - `accepted`, `awaiting_approval`, `authorized`, `dispatched` and `unknown`
 *   are never trimmed; what belongs to an execution (its approval request, its
 *   tasks) is trimmed with it.
 */
export interface ExecutionStore extends JournalReader {
  readonly kind: 'memory' | 'sqlite' | 'postgres';

  claim(input: ClaimInput, options?: ClaimOptions): Promise<ClaimResult>;
  transition(input: TransitionInput): Promise<ExecutionRecord | undefined>;
  /** No other process reads this store: a write held back (deferrable) is still seen by every read (sqlite/file-sharing.ts). */
  soleReader(): boolean;
  /** Extends the lease of the token holder; false if it no longer holds the execution. */
  renewLease(id: string, token: string, leaseMs: number): Promise<boolean>;
  /** Records delivery once (the first time); later calls change nothing. */
  markDelivered(id: string, events?: ActivityEventInput[]): Promise<void>;

  get(id: string): Promise<ExecutionRecord | undefined>;
  /** The execution a new call with this fingerprint would attach to, if any. */
  findActive(fingerprint: string): Promise<ExecutionRecord | undefined>;
  /** Newest first by id, at most `limit` (default 100). */
  list(filter?: ExecutionFilter): Promise<ExecutionRecord[]>;
  /** Each state asked, in order, counted with one bounded read (the (state, updated_at) index); readAt: the store's clock. */
  countStates(states: readonly ExecutionState[]): Promise<{ counts: StateCount[]; readAt: number }>;
  /** How many executions the filter admits in each state (every state, 0 included), by one aggregate query. */
  countByState(filter?: ExecutionCountFilter): Promise<Record<ExecutionState, number>>;

  /** Appends events that belong to no state change (`receipt_hit`, `id_reused`; session events to `sessions`). */
  appendEvents(events: ActivityEventInput[], stream?: JournalStream): Promise<void>;
  // readJournal and journalHead come from JournalReader (journal/reader.ts).
  /** Every activity entry of one execution, in order: its timeline. */
  journalFor(executionId: string): Promise<ActivityEntry[]>;

  /**
   * Sweeper: dispatched executions whose lease expired or whose deadline passed
   * become `unknown`; finished executions older than `retentionMs` are deleted.
   * With `dryRun`, reports what it would do and changes nothing.
   */
  sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult>;

  /** The approval request of one execution, if it has one. */
  getApproval(id: string): Promise<ApprovalRequest | undefined>;
  /** Approval requests, newest first. */
  listApprovals(filter?: ApprovalFilter): Promise<ApprovalRequest[]>;
  /** See DecideApprovalInput: of any number of concurrent decisions, exactly one is applied. */
  decideApproval(input: DecideApprovalInput): Promise<DecideApprovalResult>;
  /** This actor's session was approved for this tool (`approval: session`), in any process. */
  sessionApproved(actor: string, session: string, tool: string): Promise<boolean>;

  /**
   * The actor's task on the execution: created (with `events`, in the same write), or the one
   * that already exists for (executionId, actor), returned unchanged and `events` not written.
   * Rejects when there is no such execution, writing nothing.
   */
  openTask(input: OpenTaskInput, events?: ActivityEventInput[]): Promise<TaskRecord>;
  /** A task and its execution; undefined for an unknown (or trimmed) id. The caller compares the actor. */
  getTask(taskId: string): Promise<{ task: TaskRecord; record: ExecutionRecord } | undefined>;
  findTask(executionId: string, actor: string): Promise<TaskRecord | undefined>;
  /** One actor's tasks in taskId order, from after `after` (exclusive), at most `limit`. */
  listTasks(actor: string, page: { after?: string; limit: number }): Promise<TaskRecord[]>;
  /**
   * Sets cancelRequestedAt (the store's clock) the first time, with `events`; later calls return
   * the row unchanged and write nothing. Undefined for an unknown task.
   */
  requestTaskCancel(taskId: string, events?: ActivityEventInput[]): Promise<TaskRecord | undefined>;
  /**
   * The holder of a dispatched execution (its claim token) records the upstream's task, with
   * `events`; false, and nothing written, for anyone else or an execution no longer dispatched.
   */
  setUpstreamTask: HolderWrite<UpstreamTaskHandle>;

  /**
   * The holder of a dispatched execution (its claim token) records what its target asked for
   * (answers start empty), or clears it (null), with `events`; false, and nothing written, for
   * anyone else or an execution no longer dispatched.
   */
  setTaskInput: HolderWrite<Record<string, TaskInputRequest> | null>;
  /**
   * As setTaskInput, but the requests join the open input (a key asked already keeps its request
   * and answer), in one atomic write: an answer taken meanwhile is never lost (addedRequests).
   */
  addTaskInput: HolderWrite<Record<string, TaskInputRequest>>;
  /**
   * A client's answers to the open input of a dispatched execution, taken in one atomic write:
   * a key that was asked and not answered yet, with an object as its answer; anything else is
   * ignored. `events` are written only when a key was taken. The input as it stands after;
   * undefined when none is open.
   */
  answerTaskInput(
    id: string,
    answers: Record<string, unknown>,
    events?: ActivityEventInput[],
  ): Promise<TaskInput | undefined>;
  /** What a task's holder watches for: a cancel of any of its tasks, and its open input. Undefined: no such execution. */
  watchTask(id: string): Promise<TaskWatch | undefined>;

  /** The store's clock. */
  now(): Promise<number>;
  close(): Promise<void>;
}
