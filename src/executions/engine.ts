import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { decideApproval } from '../approval/decide.js';
import type { ResolvedContract } from '../contracts/contract.js';
import { DEFAULT_STATUS_TOOL, TASK_POLL_INTERVAL_MS } from '../defaults.js';
import { IDEM_CODES, StoreUnavailableError } from '../errors.js';
import type { Fingerprinter } from '../identity/fingerprint.js';
import { KnownSecrets } from '../identity/redaction.js';
import type { TaskView } from '../protocol/tasks.js';
import type { ToolResult } from '../store/outcome.js';
import type { ApprovalChannel, ExecutionRecord, ExecutionStore } from '../store/types.js';
import { idemAnswer, isResultOf, META } from './answers.js';
import { Approvals } from './approval.js';
import type { Approver, Caller, CallIdentity, Dispatch, Logger, Rerun, ToolCall } from './call.js';
import { dispatchReadOnly } from './dispatch.js';
import { identifiedOrRefused, identify } from './identify.js';
import { executionIds } from './ids.js';
import { InFlight } from './in-flight.js';
import { LateOutcomes } from './late-outcome.js';
import type { CallObserver } from './observer.js';
import { resolveExecution } from './operator.js';
import { RecentCalls } from './recent-calls.js';
import { repeatable, repeatExecution } from './repeat.js';
import { Resumptions, type UpstreamTaskFollowers } from './resume.js';
import { runSequence, type SequenceParts } from './sequence.js';
import { type Arrival, SessionOrder } from './session-order.js';
import { NOT_YET_DISPATCHED } from './states.js';
import { status } from './status.js';
import type { StepContext } from './step-context.js';
import { approvalDecided } from './task-approval.js';
import { TaskChanges, TaskWatcher } from './task-changes.js';
import { cancelTask, getTask, listTasks, updateTask } from './tasks.js';

// A call with effects is identified here (identify.ts), then runs the fixed sequence in
// sequence.ts, which takes it through the steps beside it, one file each: claim.ts (claim,
// attach, replace, conflict) → approval.ts → take-over.ts → dispatch.ts → record-outcome.ts →
// recovery.ts (expired lease, status probe, keyed re-send) → record-answer.ts (what the caller
// sees); status.ts and repeat.ts serve the status tool. This file is the public face.

export interface ExecutionEngineOptions {
  store: ExecutionStore;
  fingerprinter: Fingerprinter;
  /** Lease owner name; defaults to host:pid:random. */
  owner?: string;
  logger?: Logger;
  /** Name of the status tool quoted in advice texts. */
  statusTool?: string;
  approver?: Approver;
  /** Clock for window buckets (store clocks govern leases). */
  clock?: () => number;
  /**
   * Secrets no argument carries (resolved credentials): scrubbed from every
   * result, stored or answered, and from what is logged. Default: an empty set.
   */
  knownSecrets?: KnownSecrets;
  /** Sees every side-effecting call and its answer (metrics, traces: src/metrics). */
  observer?: CallObserver;
  /**
   * A task's time to live: how long its execution is kept once finished (the store's retention),
   * so a task lives at least its ttlMs. Null: kept until removed by hand (no sweep).
   */
  taskTtlMs?: number | null;
}

/** A new call while the process shuts down: nothing was sent, and a retry elsewhere (or after the restart) runs it. */
const shuttingDown = (): ToolResult =>
  idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
    detail:
      'This server is shutting down and takes no new calls; call again (it restarts, or another instance answers).',
  });

const silentLogger: Logger = {
  warn: () => {},
  error: (message, fields) =>
    process.stderr.write(`idem: ${message} ${fields ? JSON.stringify(fields) : ''}\n`),
};

/** Log lines carry error texts, which may quote a credential a target echoed back. */
function redactingLogger(logger: Logger, secrets: KnownSecrets): Logger {
  return {
    warn: (message, fields) => logger.warn(secrets.redact(message), secrets.redact(fields)),
    error: (message, fields) => logger.error(secrets.redact(message), secrets.redact(fields)),
  };
}

/**
 * Layer 2 (docs/lifecycle.md, steps 4–12): gives each intended action one execution. Identifies
 * the call, attaches it to a prior execution of the same intent or claims a
 * new one, dispatches at most as the contract allows, and records every step
 * before the step it guards.
 */
export class ExecutionEngine {
  readonly store: ExecutionStore;
  readonly fingerprinter: Fingerprinter;
  readonly owner: string;
  readonly statusTool: string;
  readonly #logger: Logger;
  readonly #clock: () => number;
  /** Contracts by tool name, so the status tool can run a tool's status probe. */
  readonly #contracts = new Map<string, ResolvedContract>();
  readonly #approvals: Approvals;
  /** Arguments of recent calls, in memory only, so that a finished one can be repeated on purpose. */
  readonly #recent = new RecentCalls();
  /** What the steps share (see step-context.ts). */
  readonly #steps: StepContext;
  readonly #sequence: SequenceParts;
  readonly #observer: CallObserver | undefined;
  /** The upstream tasks this process took over to follow again (resume.ts). */
  readonly #resumptions: Resumptions;
  /** The order of each session's calls with effects: what tells a retry from a new action. */
  readonly #order = new SessionOrder();

  constructor(options: ExecutionEngineOptions) {
    this.store = options.store;
    this.fingerprinter = options.fingerprinter;
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.statusTool = options.statusTool ?? DEFAULT_STATUS_TOOL;
    const knownSecrets = options.knownSecrets ?? new KnownSecrets();
    this.#logger = redactingLogger(options.logger ?? silentLogger, knownSecrets);
    this.#approvals = new Approvals(options.approver, this.#logger);
    this.#clock = options.clock ?? Date.now;
    this.#steps = {
      store: this.store,
      owner: this.owner,
      statusTool: this.statusTool,
      logger: this.#logger,
      contracts: this.#contracts,
      knownSecrets,
      tasks: { ttlMs: options.taskTtlMs ?? null, pollIntervalMs: TASK_POLL_INTERVAL_MS },
      taskCancels: new Map(),
      taskInputs: new Map(),
      closing: { value: false },
      taskChanges: new TaskChanges(),
      inFlight: new InFlight(),
      lateOutcomes: new LateOutcomes(this.#logger),
    };
    this.#sequence = { ctx: this.#steps, approvals: this.#approvals, newId: executionIds() };
    this.#observer = options.observer;
    this.#resumptions = new Resumptions(this.#steps);
  }

  registerContract(tool: string, contract: ResolvedContract): void {
    this.#contracts.set(tool, contract);
  }

  /** Runs one tool call under its contract and returns what the caller should see. */
  execute(call: ToolCall, dispatch: Dispatch): Promise<ToolResult> {
    if (this.#draining) return Promise.resolve(shuttingDown());
    return this.#steps.inFlight.track(this.#run(call, dispatch), call);
  }

  /**
   * Shutting down (docs/reliability.md, "Restarts"): from now on every new call is answered
   * IDEM_NOT_EXECUTED at once — nothing is claimed or sent, and its retry (to another gateway, or
   * this one restarted) runs it. Resolves true once the calls already under way have finished and
   * their outcomes are recorded (held ones included: late-outcome.ts), false if `graceMs` passed
   * first (what is still under way then is left to become `unknown`).
   */
  async drain(graceMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    this.#draining = true;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<boolean>((resolve) => {
      if (Number.isFinite(graceMs)) timer = setTimeout(() => resolve(false), graceMs);
    });
    const idle = this.#steps.inFlight.idle().then(() => true);
    return Promise.race([idle, graceOver]).finally(() => clearTimeout(timer));
  }

  /** Calls, unrecorded outcomes and held outcomes under way now (what drain() waits for). */
  get inFlight(): number {
    return this.#steps.inFlight.count;
  }

  #draining = false;

  async #run(call: ToolCall, dispatch: Dispatch): Promise<ToolResult> {
    if (call.contract.replay === 'read_only') return this.#execute(call, dispatch);
    // Copied before the handler runs: a handler that changes its arguments does not change the repeat.
    const copy = repeatable(call);
    const arrival = this.#order.arrive(call.caller);
    const result = this.#observer
      ? await this.#observer.observe(call, dispatch, (observed) => this.#execute(call, observed, arrival))
      : await this.#execute(call, dispatch, arrival);
    const ref = result._meta?.[META.executionId];
    // A replay is remembered too: the model may want to repeat what it was handed, even from another process.
    if (copy && typeof ref === 'string') this.#recent.remember(ref, copy.call, copy.size);
    if (arrival && typeof ref === 'string' && isResultOf(result)) arrival.answer(ref);
    return result;
  }

  async #execute(call: ToolCall, dispatch: Dispatch, arrival?: Arrival): Promise<ToolResult> {
    const contract = call.contract;
    if (contract.replay === 'read_only') return dispatchReadOnly(this.#steps, call, dispatch);

    const identity = identifiedOrRefused(() => this.identify(call));
    if ('refused' in identity) return identity.refused;

    // The last record of this intent we saw: if the store fails while we deal with one that
    // may already have been dispatched, "not executed" would be a lie.
    const seen: { record?: ExecutionRecord } = {};
    try {
      const settled = await runSequence(this.#sequence, call, identity, dispatch, {
        seen,
        // A key the caller named is one action whatever its session did (a gateway in front re-sends it).
        ...(arrival && call.idempotencyKey === undefined ? { session: arrival } : {}),
      });
      // This call's own execution took effect: a repeat of what was answered before it is a new action.
      if (settled?.claimed !== undefined && isResultOf(settled.answer, settled.claimed)) arrival?.ran();
      if (settled) return settled.answer;
      return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        detail: 'Too many concurrent changes to this action; it was not started.',
      });
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        const last = seen.record;
        if (last && !NOT_YET_DISPATCHED.includes(last.state)) {
          this.#logger.error('store unavailable while attaching to a dispatched execution', { ref: last.id });
          return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, {
            ref: last.id,
            state: last.state,
            statusTool: this.statusTool,
            detail: 'An earlier attempt was sent, and the execution record cannot be read right now.',
          });
        }
        // Its message is what an operator must read: a refused store's says why and how to recover.
        this.#logger.error('store unavailable before dispatch; not executed', {
          tool: call.tool,
          error: error.message,
        });
        return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
          detail: 'The execution record could not be written, so nothing was sent.',
        });
      }
      throw error;
    }
  }

  /** The intent fingerprint, request digest and redacted preview of a call. Throws InvalidInputError. */
  identify(call: ToolCall): CallIdentity {
    return identify(this.fingerprinter, this.#clock, call);
  }

  /**
   * The status tool's answer for `ref`, as seen by `actor`. A stale dispatch is
   * turned into `unknown` here too, and a status probe is tried if the tool has one.
   */
  status(ref: string, actor: string): Promise<ToolResult> {
    return status(this.#steps, ref, actor);
  }

  /**
   * `actor`'s task, from the store (undefined: none of theirs by that id); `delivering` when the
   * answer hands its result over (2026-07-28 tasks/get; not the 2025-11-25 one, whose Task has none).
   */
  getTask(taskId: string, actor: string, delivering = true): Promise<TaskView | undefined> {
    return getTask(this.#steps, taskId, actor, delivering);
  }

  /**
   * Tells `heard` how `actor`'s task `taskId` reads each time this process changes it, and once
   * now (a change made before the watch began is not missed); the returned function ends the
   * watch. Undefined: none of `actor`'s. `delivering` as for getTask: the listener hands the
   * result over. Changes made by another process of the fleet are not heard (task-changes.ts).
   */
  async watchTask(
    taskId: string,
    actor: string,
    heard: (view: TaskView) => void,
    delivering = false,
  ): Promise<(() => void) | undefined> {
    const found = await this.store.getTask(taskId);
    if (!found || found.task.actor !== actor) return undefined;
    const watcher = new TaskWatcher(
      () => getTask(this.#steps, taskId, actor, delivering),
      heard,
      (error) => this.#logger.warn('a watched task could not be read', { error: String(error) }),
    );
    const unwatch = this.#steps.taskChanges.add(found.record.id, watcher);
    watcher.reread();
    return unwatch;
  }

  /** How many task watches are open in this process (a bound on what waits for tasks). */
  get taskWatches(): number {
    return this.#steps.taskChanges.watching;
  }

  /** `tasks/cancel` (see tasks.ts): the task as it stands after the cancel, or undefined when none of `actor`'s. */
  cancelTask(taskId: string, actor: string): Promise<TaskView | undefined> {
    return cancelTask(this.#steps, taskId, actor);
  }

  /** `tasks/update`: answers to what the task's target asked (see tasks.ts); undefined when none of `actor`'s. */
  updateTask(taskId: string, actor: string, responses: unknown): Promise<TaskView | undefined> {
    return updateTask(this.#steps, taskId, actor, responses);
  }

  /** `tasks/list` (2025-11-25): `actor`'s tasks, a page at a time. */
  listTasks(
    actor: string,
    after: string | undefined,
    limit = 50,
  ): Promise<{ tasks: TaskView[]; next?: string }> {
    return listTasks(this.#steps, actor, after, limit);
  }

  /**
   * Takes over the executions whose follower of an upstream's task was lost (resume.ts
   * `resumable`) and follows each task again through `followers`, recording its outcome when it
   * ends. Resolves with the ids taken over, once each is under way.
   */
  resumeUpstreamTasks(followers: UpstreamTaskFollowers): Promise<string[]> {
    return this.#resumptions.pass(followers);
  }

  /**
   * Closing: no more takeovers, and a following of an upstream's task (dispatched here, or
   * resumed) that ends because its connection closed is not recorded — its lease lapses, and the
   * next gateway follows the task again. Resolves once every resumed following ended: call it,
   * then close the upstream connections, then await it.
   */
  stopFollowing(): Promise<void> {
    this.#steps.closing.value = true;
    // Outcomes still held for the store are given up (logged): what drain() waited for is past.
    this.#steps.lateOutcomes.stop();
    return this.#resumptions.settled();
  }

  /** A deliberate repeat of the finished execution `ref`, as a new execution (see repeat.ts). */
  async repeat(ref: string, caller: Caller, rerun: Rerun): Promise<ToolResult> {
    if (this.#draining) return shuttingDown();
    const arrival = this.#order.arrive(caller);
    const answer = await repeatExecution(
      { sequence: this.#sequence, recent: this.#recent, identify: (call) => this.identify(call) },
      ref,
      caller,
      rerun,
    );
    const ranAs = answer._meta?.[META.executionId];
    // A repeat that ran is a call with effects of its session, like any other.
    if (arrival && typeof ranAs === 'string' && isResultOf(answer, ranAs)) {
      if (answer._meta?.[META.repeatOf] !== undefined) arrival.ran();
      arrival.answer(ranAs);
    }
    return answer;
  }

  /**
   * A human approved an execution waiting for approval; the next matching call
   * dispatches it. Undefined when it was no longer waiting (decided, expired).
   */
  async approve(ref: string, by: string, via: ApprovalChannel = 'api'): Promise<ExecutionRecord | undefined> {
    const result = await decideApproval(this.store, ref, 'approved', { by, via });
    // A task of it held by this process is sent at once (approved-task.ts), and its watchers hear of it.
    if (result.decided) approvalDecided(this.#steps, ref);
    return result.decided ? result.record : undefined;
  }

  async deny(
    ref: string,
    by: string,
    reason: string,
    via: ApprovalChannel = 'api',
  ): Promise<ExecutionRecord | undefined> {
    const result = await decideApproval(this.store, ref, 'denied', { by, via, reason });
    if (result.decided) approvalDecided(this.#steps, ref);
    return result.decided ? result.record : undefined;
  }

  async resolve(
    ref: string,
    as: 'completed' | 'failed',
    by: string,
    note: string,
  ): Promise<ExecutionRecord | undefined> {
    const resolved = await resolveExecution(this.store, ref, as, by, note);
    if (resolved) this.#steps.taskChanges.changed(ref);
    return resolved;
  }
}
