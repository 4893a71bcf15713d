import { buildRow, GENESIS_HASH, rowEntries } from '../../journal/chain.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../../journal/events.js';
import { withOutcomeDigest } from '../../journal/outcome-digest.js';
import type { ExecutionState } from '../../journal/states.js';
import { withTrimJournaled } from '../../journal/trims.js';
import { holderGone } from '../lease.js';
import { EXPIRE, expires, sweepEvents, trimmable } from '../sweep.js';
import { keptUpstreamTask, taskWithoutExecution } from '../tasks.js';
import type {
  ApprovalFilter,
  ApprovalRequest,
  ClaimInput,
  ClaimOptions,
  ClaimResult,
  DecideApprovalInput,
  DecideApprovalResult,
  ExecutionCountFilter,
  ExecutionFilter,
  ExecutionRecord,
  ExecutionStore,
  OpenTaskInput,
  SweepResult,
  TaskRecord,
  TransitionInput,
} from '../types.js';
import { MemoryExecutionList } from './execution-list.js';
import { countRowStates } from './state-counts.js';
import { MemoryTasks } from './tasks.js';

interface Row extends Omit<ExecutionRecord, 'readAt'> {
  claimToken: string | null;
  active: boolean;
}

/**
 * The reference store: everything in one process's memory. Each method runs
 * to completion without awaiting, so on one event loop it is atomic — the
 * same guarantees the SQL stores get from transactions.
 */
export class MemoryStore implements ExecutionStore {
  readonly kind = 'memory' as const;
  readonly #rows = new Map<string, Row>();
  readonly #activeByFingerprint = new Map<string, string>();
  readonly #journals: Record<JournalStream, ActivityEntry[]> = { activity: [], sessions: [] };
  readonly #approvals = new Map<string, ApprovalRequest>();
  /** Approved (actor, session, tool) → when. */
  readonly #approvedSessions = new Map<string, number>();
  readonly #tasks = new MemoryTasks();
  readonly #clock: () => number;
  readonly #list = new MemoryExecutionList(
    () => this.#rows.values(),
    () => this.#journals.activity,
    (taskId) => this.#tasks.get(taskId)?.executionId,
  );

  constructor(options: { clock?: () => number } = {}) {
    this.#clock = options.clock ?? Date.now;
  }

  async claim(input: ClaimInput, options: ClaimOptions = {}): Promise<ClaimResult> {
    const now = this.#clock();
    if (
      options.replacing !== undefined &&
      this.#activeByFingerprint.get(input.fingerprint) === options.replacing
    ) {
      this.#activeByFingerprint.delete(input.fingerprint);
      const old = this.#rows.get(options.replacing);
      if (old) old.active = false;
    }
    const holderId = this.#activeByFingerprint.get(input.fingerprint);
    if (holderId !== undefined) {
      const holder = this.#rows.get(holderId);
      return { won: false, record: holder && this.#view(holder, now) };
    }
    const row: Row = {
      id: input.id,
      fingerprint: input.fingerprint,
      requestDigest: input.requestDigest ?? null,
      actor: input.actor,
      tool: input.tool,
      session: input.session,
      replay: input.replay,
      state: input.state,
      createdAt: now,
      updatedAt: now,
      attachUntil: now + input.attachWindowMs,
      dispatchedAt: input.state === 'dispatched' ? now : null,
      deadlineAt: input.state === 'dispatched' ? now + (input.dispatchTimeoutMs ?? 0) : null,
      leaseOwner: input.leaseOwner,
      leaseExpiresAt: now + input.leaseMs,
      outcome: null,
      deliveredAt: null,
      argumentsPreview: input.argumentsPreview,
      note: null,
      upstreamTask: null,
      claimToken: input.claimToken,
      active: true,
    };
    this.#rows.set(row.id, row);
    this.#activeByFingerprint.set(row.fingerprint, row.id);
    if (input.approval && input.state === 'awaiting_approval') {
      const { expiresInMs, ...request } = input.approval;
      this.#approvals.set(row.id, {
        executionId: row.id,
        ...request,
        requestedAt: now,
        expiresAt: now + expiresInMs,
        decision: null,
        decidedBy: null,
        decidedVia: null,
        decidedAt: null,
        reason: null,
      });
    }
    this.#append(withTrimJournaled(input.id, options.events), now);
    return { won: true, record: this.#view(row, now) };
  }

  /** One process's memory: nobody else reads it. */
  soleReader(): boolean {
    return true;
  }

  async transition(t: TransitionInput): Promise<ExecutionRecord | undefined> {
    const now = this.#clock();
    const row = this.#rows.get(t.id);
    if (!row || !t.from.includes(row.state)) return undefined;
    if (t.token !== undefined && row.claimToken !== t.token) return undefined;
    if (t.requireStale && !holderGone(row, now)) return undefined;
    if (t.leaseExpiresAt !== undefined && row.leaseExpiresAt !== t.leaseExpiresAt) return undefined;
    row.state = t.to;
    row.updatedAt = now;
    if (t.holder === null) {
      row.claimToken = null;
      row.leaseOwner = null;
      row.leaseExpiresAt = null;
    } else if (t.holder !== undefined) {
      row.claimToken = t.holder.token;
      row.leaseOwner = t.holder.owner;
      row.leaseExpiresAt = now + t.holder.leaseMs;
    }
    if (t.dispatchTimeoutMs !== undefined) {
      row.dispatchedAt = now;
      row.deadlineAt = now + t.dispatchTimeoutMs;
    }
    if (t.outcome !== undefined) row.outcome = structuredClone(t.outcome);
    if (t.delivered && row.deliveredAt === null) row.deliveredAt = now;
    if (t.release && row.active) {
      row.active = false;
      if (this.#activeByFingerprint.get(row.fingerprint) === row.id)
        this.#activeByFingerprint.delete(row.fingerprint);
    }
    if (t.note !== undefined) row.note = t.note;
    this.#append(withOutcomeDigest(t.id, t.outcome, t.events), now);
    return this.#view(row, now);
  }

  async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    const now = this.#clock();
    const row = this.#rows.get(id);
    if (!row || row.claimToken !== token || row.leaseExpiresAt === null) return false;
    row.leaseExpiresAt = now + leaseMs;
    return true;
  }

  async markDelivered(id: string, events?: ActivityEventInput[]): Promise<void> {
    const now = this.#clock();
    const row = this.#rows.get(id);
    if (!row || row.deliveredAt !== null) return;
    row.deliveredAt = now;
    this.#append(events, now);
  }

  async get(id: string): Promise<ExecutionRecord | undefined> {
    const row = this.#rows.get(id);
    return row && this.#view(row, this.#clock());
  }

  async findActive(fingerprint: string): Promise<ExecutionRecord | undefined> {
    const id = this.#activeByFingerprint.get(fingerprint);
    const row = id === undefined ? undefined : this.#rows.get(id);
    return row && this.#view(row, this.#clock());
  }

  async list(filter: ExecutionFilter = {}): Promise<ExecutionRecord[]> {
    const now = this.#clock();
    return this.#list.list(filter).map((row) => this.#view(row as Row, now));
  }

  async countByState(filter: ExecutionCountFilter = {}): Promise<Record<ExecutionState, number>> {
    return this.#list.countByState(filter);
  }

  readonly countStates: ExecutionStore['countStates'] = async (states) => ({
    counts: countRowStates(this.#rows.values(), states),
    readAt: this.#clock(),
  });

  async appendEvents(events: ActivityEventInput[], stream: JournalStream = 'activity'): Promise<void> {
    this.#append(events, this.#clock(), stream);
  }

  async readJournal(
    afterSeq = 0,
    limit = 1000,
    stream: JournalStream = 'activity',
  ): Promise<ActivityEntry[]> {
    return this.#journals[stream]
      .filter((e) => e.seq > afterSeq)
      .slice(0, limit)
      .map((e) => structuredClone(e));
  }

  async journalHead(stream: JournalStream = 'activity'): Promise<{ seq: number; hash: string } | undefined> {
    const last = this.#journals[stream].at(-1);
    return last && { seq: last.seq, hash: last.hash };
  }

  async journalFor(executionId: string): Promise<ActivityEntry[]> {
    return this.#journals.activity
      .filter((e) => e.executionId === executionId)
      .map((e) => structuredClone(e));
  }

  async sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult> {
    const now = this.#clock();
    const cutoff = now - options.retentionMs;
    const rows = [...this.#rows.values()];
    const expired = rows.filter((row) => expires(row, now));
    const trimmed = rows.filter((row) => trimmable(row, cutoff));
    if (options.dryRun) {
      return {
        expired: expired.map((row) => ({ ...this.#view(row, now), state: EXPIRE.to })),
        trimmed: trimmed.length,
      };
    }
    for (const row of expired) Object.assign(row, { state: EXPIRE.to, updatedAt: now });
    for (const row of trimmed) {
      this.#rows.delete(row.id);
      this.#approvals.delete(row.id);
      this.#tasks.deleteFor(row.id);
      if (this.#activeByFingerprint.get(row.fingerprint) === row.id)
        this.#activeByFingerprint.delete(row.fingerprint);
    }
    for (const [key, at] of this.#approvedSessions) if (at <= cutoff) this.#approvedSessions.delete(key);
    const swept = sweepEvents(
      expired,
      trimmed.map((row) => row.id),
      options.retentionMs,
    );
    this.#append(swept.events, now);
    return { expired: swept.expired.map((row) => this.#view(row, now)), trimmed: trimmed.length };
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    const request = this.#approvals.get(id);
    return request && { ...request };
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRequest[]> {
    return [...this.#approvals.values()]
      .filter((r) => !filter.pending || r.decision === null)
      .sort((a, b) => (a.executionId < b.executionId ? 1 : a.executionId > b.executionId ? -1 : 0))
      .slice(0, filter.limit ?? 100)
      .map((r) => ({ ...r }));
  }

  async decideApproval(input: DecideApprovalInput): Promise<DecideApprovalResult> {
    const now = this.#clock();
    const row = this.#rows.get(input.id);
    const request = this.#approvals.get(input.id);
    const expired = request !== undefined && request.expiresAt <= now;
    if (
      !row ||
      !request ||
      row.state !== 'awaiting_approval' ||
      request.decision !== null ||
      expired !== (input.decision === 'expired')
    ) {
      return { decided: false, record: row && this.#view(row, now), approval: request && { ...request } };
    }
    row.state = input.decision === 'approved' ? 'authorized' : 'denied';
    row.updatedAt = now;
    row.claimToken = null;
    row.leaseOwner = null;
    row.leaseExpiresAt = null;
    if (input.decision !== 'approved') row.note = input.reason ?? input.decision;
    Object.assign(request, {
      decision: input.decision,
      decidedBy: input.by,
      decidedVia: input.via,
      decidedAt: now,
      reason: input.reason ?? (input.decision === 'expired' ? 'expired' : null),
    });
    if (input.decision === 'approved' && request.policy === 'session' && row.session !== null) {
      const key = sessionKey(row.actor, row.session, row.tool);
      if (!this.#approvedSessions.has(key)) this.#approvedSessions.set(key, now);
    }
    this.#append(input.events, now);
    return { decided: true, record: this.#view(row, now), approval: { ...request } };
  }

  async sessionApproved(actor: string, session: string, tool: string): Promise<boolean> {
    return this.#approvedSessions.has(sessionKey(actor, session, tool));
  }

  async openTask(input: OpenTaskInput, events?: ActivityEventInput[]): Promise<TaskRecord> {
    const now = this.#clock();
    if (!this.#rows.has(input.executionId)) throw taskWithoutExecution(input.executionId);
    const { task, created } = this.#tasks.open(input, now);
    if (created) this.#append(events, now);
    return task;
  }

  async getTask(taskId: string): Promise<{ task: TaskRecord; record: ExecutionRecord } | undefined> {
    const task = this.#tasks.get(taskId);
    const row = task && this.#rows.get(task.executionId);
    return row && task && { task, record: this.#view(row, this.#clock()) };
  }

  async findTask(executionId: string, actor: string): Promise<TaskRecord | undefined> {
    return this.#tasks.find(executionId, actor);
  }

  async listTasks(actor: string, page: { after?: string; limit: number }): Promise<TaskRecord[]> {
    return this.#tasks.list(actor, page);
  }

  async requestTaskCancel(taskId: string, events?: ActivityEventInput[]): Promise<TaskRecord | undefined> {
    const now = this.#clock();
    const { task, changed } = this.#tasks.requestCancel(taskId, now);
    if (changed) this.#append(events, now);
    return task;
  }

  readonly setUpstreamTask: ExecutionStore['setUpstreamTask'] = async (id, token, handle, events) =>
    this.#byHolder(id, token, events, (row, now) =>
      Object.assign(row, { upstreamTask: keptUpstreamTask(handle), updatedAt: now }),
    );

  // A task's input, answered by any caller (task-watch.ts): the rows in MemoryTasks.
  readonly setTaskInput: ExecutionStore['setTaskInput'] = async (id, token, requests, events) =>
    this.#byHolder(id, token, events, (_row, now) => this.#tasks.setInput(id, requests, now));
  readonly addTaskInput: ExecutionStore['addTaskInput'] = async (id, token, requests, events) =>
    this.#byHolder(id, token, events, (_row, now) => this.#tasks.addInput(id, requests, now));
  readonly answerTaskInput: ExecutionStore['answerTaskInput'] = async (id, answers, events) => {
    const answered = this.#tasks.answer(id, answers, this.#rows.get(id)?.state === 'dispatched');
    if (answered && answered.taken.length > 0) this.#append(events, this.#clock());
    return answered?.input;
  };
  readonly watchTask: ExecutionStore['watchTask'] = async (id) => {
    const row = this.#rows.get(id);
    return row && this.#tasks.watch(id, row.state === 'dispatched');
  };

  async now(): Promise<number> {
    return this.#clock();
  }

  async close(): Promise<void> {}

  /** A write only the holder of a dispatched execution may make (its claim token): false for anyone else. */
  #byHolder(
    id: string,
    token: string,
    events: ActivityEventInput[] | undefined,
    write: (row: Row, now: number) => void,
  ): boolean {
    const now = this.#clock();
    const row = this.#rows.get(id);
    if (!row || row.claimToken !== token || row.state !== 'dispatched') return false;
    write(row, now);
    this.#append(events, now);
    return true;
  }

  #append(events: ActivityEventInput[] | undefined, now: number, stream: JournalStream = 'activity'): void {
    if (!events || events.length === 0) return;
    // One row per write, carrying its events (docs/adr/0052), kept as the events a reader sees:
    // the row's last event has its seq and hash, so journalHead is the last entry's.
    const journal = this.#journals[stream];
    const head = journal.at(-1);
    journal.push(...rowEntries(buildRow(events, head?.seq ?? 0, now, head?.hash ?? GENESIS_HASH)));
  }

  #view(row: Row, now: number): ExecutionRecord {
    const { claimToken: _token, active: _active, ...record } = row;
    // Only the outcome and the upstream task are nested; everything else is a primitive.
    return {
      ...record,
      outcome: record.outcome && structuredClone(record.outcome),
      upstreamTask: record.upstreamTask && { ...record.upstreamTask },
      readAt: now,
    };
  }
}

const sessionKey = (actor: string, session: string, tool: string) => JSON.stringify([actor, session, tool]);
