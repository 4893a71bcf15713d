import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { monotonicFactory } from 'ulid';
import type { ResolvedContract } from '../contracts/contract.js';
import { businessKeyValue, intentScopeValue } from '../contracts/scope.js';
import {
  IDEM_CODES,
  InvalidInputError,
  NotDispatchedError,
  OutcomeUnknownError,
  StoreUnavailableError,
} from '../errors.js';
import { prepareArguments } from '../identity/arguments.js';
import type { Fingerprinter } from '../identity/fingerprint.js';
import { redactSecrets, secretValues } from '../identity/redaction.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ExecutionRecord, ExecutionStore } from '../store/types.js';
import { idemAnswer, idemCodeOf, META, markExecuted, markReplayed } from './answers.js';
import { isStale } from './leases.js';
import { approveExecution, denyExecution, resolveExecution } from './operator.js';
import type { StoredOutcome, ToolResult } from './outcome.js';
import { RecentCalls, type RepeatableCall } from './recent-calls.js';
import { NOT_YET_DISPATCHED } from './states.js';

/** What a call is, as the store knows it (see ExecutionEngine.identify). */
export interface CallIdentity {
  /** What is claimed: the whole request, or under a business key, the action the key names. */
  fingerprint: string;
  /** Under a business key, the whole request's fingerprint (ExecutionRecord.requestDigest); else null. */
  requestDigest: string | null;
  preview: string;
}

/** Who is calling, as the transport and auth established it — never from the arguments. */
export interface Caller {
  actor: string;
  /** Transport session (MCP session id, stdio connection id); null where ids have no session scope. */
  session: string | null;
  /** The request that carried this call (rendered request key), for the journal. */
  requestRef?: string | null;
}

/** One tool call with effects, as the engine sees it. */
export interface ToolCall {
  tool: string;
  channel: string;
  target: string;
  credentialRef: string | null;
  method: string;
  /** Validated arguments. Copied at identification; later mutation changes nothing. */
  arguments: unknown;
  contract: ResolvedContract;
  caller: Caller;
  /**
   * The caller's own idempotency key for this action, when it sent one (a
   * gateway in front passes its execution id in `_meta`). It then is the
   * intent scope: the same key is the same action, whatever the window.
   */
  idempotencyKey?: string;
  /** The caller cancelled the call: after dispatch, the outcome becomes unknown (not failed). */
  signal?: AbortSignal;
}

export interface DispatchContext {
  /** The execution id: pass it on as the target's idempotency key. null for read-only tools. */
  executionId: string | null;
  /** True when this is a re-send of an earlier dispatch with the same key (replay class `keyed`). */
  redispatch: boolean;
}

/**
 * Performs the action. Resolve with the target's result (`isError: true` for
 * a failure the target reported); throw OutcomeUnknownError when it is not
 * known whether the effect happened. Any other throw is recorded as `failed`.
 */
export type Dispatch = (ctx: DispatchContext) => Promise<ToolResult>;

/**
 * How a surface (gateway session, library) runs a remembered call again: the
 * call as it would make it now (current contract, this caller) and how to
 * dispatch it; or an answer when it cannot run it now (nothing is run); or
 * undefined when it no longer knows the tool.
 */
export type Rerun = (
  call: RepeatableCall,
) => Promise<{ call: ToolCall; dispatch: Dispatch } | { answer: ToolResult } | undefined>;

export interface Logger {
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Decides "may this caller run this?" for contracts that require approval (DESIGN §7). */
export type Approver = (request: {
  executionId: string;
  tool: string;
  actor: string;
  session: string | null;
  argumentsPreview: string;
}) => Promise<'approved' | 'denied' | 'pending'>;

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
}

/** Lost a compare-and-set to another caller: read again and decide again. */
const RETRY = Symbol('retry');
type Attempt = ToolResult | typeof RETRY;

const MAX_SETTLE_ATTEMPTS = 8;

const silentLogger: Logger = {
  warn: () => {},
  error: (message, fields) =>
    process.stderr.write(`idem: ${message} ${fields ? JSON.stringify(fields) : ''}\n`),
};

/**
 * Layer 2 (DESIGN §4): gives each intended action one execution. Identifies
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
  readonly #approver: Approver | undefined;
  readonly #clock: () => number;
  readonly #newId = monotonicFactory(pooledRandom);
  /** Contracts by tool name, so the status tool can run a tool's status probe. */
  readonly #contracts = new Map<string, ResolvedContract>();
  /** Sessions a human approved, for `approval: session`: actor ‖ session ‖ tool. */
  readonly #approvedSessions = new Set<string>();
  /** Arguments of recent calls, in memory only, so that a finished one can be repeated on purpose. */
  readonly #recent = new RecentCalls();

  constructor(options: ExecutionEngineOptions) {
    this.store = options.store;
    this.fingerprinter = options.fingerprinter;
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.statusTool = options.statusTool ?? 'idem_execution_status';
    this.#logger = options.logger ?? silentLogger;
    this.#approver = options.approver;
    this.#clock = options.clock ?? Date.now;
  }

  registerContract(tool: string, contract: ResolvedContract): void {
    this.#contracts.set(tool, contract);
  }

  /** Runs one tool call under its contract and returns what the caller should see. */
  async execute(call: ToolCall, dispatch: Dispatch): Promise<ToolResult> {
    if (call.contract.replay === 'read_only') return this.#execute(call, dispatch);
    // Copied before the handler runs: a handler that changes its arguments does not change the repeat.
    const repeatable = this.#repeatable(call);
    const result = await this.#execute(call, dispatch);
    const ref = result._meta?.[META.executionId];
    // A replay is remembered too: the model may want to repeat what it was handed, even from another process.
    if (repeatable && typeof ref === 'string') this.#recent.remember(ref, repeatable.call, repeatable.size);
    return result;
  }

  #repeatable(call: ToolCall): { call: RepeatableCall; size: number } | undefined {
    try {
      const size = JSON.stringify(call.arguments ?? {}).length;
      // A clone, not the JSON: a library handler's arguments may hold what JSON cannot (a Date from zod).
      const copy = { tool: call.tool, arguments: structuredClone(call.arguments), actor: call.caller.actor };
      return { call: copy, size };
    } catch {
      // Not cloneable (or not serializable): such a call is not repeated from memory.
      return undefined;
    }
  }

  async #execute(call: ToolCall, dispatch: Dispatch): Promise<ToolResult> {
    const contract = call.contract;
    if (contract.replay === 'read_only') return dispatch({ executionId: null, redispatch: false });

    let identity: CallIdentity;
    try {
      identity = this.identify(call);
    } catch (error) {
      if (error instanceof InvalidInputError) {
        return idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `${error.reason}: ${error.message}` });
      }
      throw error;
    }

    // The last record of this intent we saw: if the store fails while we deal with one that
    // may already have been dispatched, "not executed" would be a lie.
    let seen: ExecutionRecord | undefined;
    try {
      // Claim first: for a new intent (the common case) the one INSERT is the whole lookup.
      // On a conflict the store hands back the holder, which this call then attaches to — or,
      // if it can no longer be attached to, replaces in the next claim.
      let replacing: string | undefined;
      for (let attempt = 0; attempt < MAX_SETTLE_ATTEMPTS; attempt++) {
        const token = newToken();
        const id = `exe_${this.#newId()}`;
        const needsApproval = this.#needsApproval(call);
        // With nothing between them, accepting and marking the dispatch are one write:
        // both are durable before the handler runs, and the hot path saves a transaction.
        const claim = await this.store.claim(
          {
            id,
            fingerprint: identity.fingerprint,
            requestDigest: identity.requestDigest,
            actor: call.caller.actor,
            tool: call.tool,
            session: call.caller.session,
            replay: contract.replay,
            state: needsApproval ? 'awaiting_approval' : 'dispatched',
            ...(needsApproval ? {} : { dispatchTimeoutMs: contract.timeoutMs }),
            attachWindowMs: contract.attachWindowMs,
            claimToken: token,
            leaseOwner: this.owner,
            leaseMs: contract.leaseMs,
            argumentsPreview: identity.preview,
          },
          {
            ...(replacing ? { replacing } : {}),
            events: [
              this.#event('received', call, id, { preview: identity.preview }),
              this.#event('accepted', call, id),
              this.#event(needsApproval ? 'awaiting_approval' : 'dispatched', call, id),
            ],
          },
        );
        if (claim.won) {
          const answer =
            claim.record.state === 'dispatched'
              ? await this.#runDispatch(claim.record, token, call, dispatch, false)
              : await this.#runClaimed(claim.record, token, call, dispatch);
          if (answer !== RETRY) return answer;
          replacing = undefined;
          continue;
        }
        seen = claim.record;
        replacing = undefined;
        if (!claim.record) continue;
        const match = this.#match(claim.record, call, identity);
        if (match === 'attach') {
          const answer = await this.#attach(claim.record, call, dispatch);
          if (answer !== RETRY) return answer;
        } else if (match === 'replace') {
          replacing = claim.record.id;
        } else {
          return this.#keyConflict(claim.record, call);
        }
      }
      return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        detail: 'Too many concurrent changes to this action; it was not started.',
      });
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        if (seen && !NOT_YET_DISPATCHED.includes(seen.state)) {
          this.#logger.error('store unavailable while attaching to a dispatched execution', { ref: seen.id });
          return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, {
            ref: seen.id,
            state: seen.state,
            statusTool: this.statusTool,
            detail: 'An earlier attempt was sent, and the execution record cannot be read right now.',
          });
        }
        this.#logger.error('store unavailable before dispatch; not executed', { tool: call.tool });
        return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
          detail: 'The execution record could not be written, so nothing was sent.',
        });
      }
      throw error;
    }
  }

  /** The intent fingerprint, request digest and redacted preview of a call. Throws InvalidInputError. */
  identify(call: ToolCall): CallIdentity {
    const prepared = prepareArguments(call.arguments, call.contract.argumentRules, this.fingerprinter);
    const scope = call.contract.scope;
    const intentScope =
      call.idempotencyKey !== undefined
        ? { kind: 'idempotency_key', key: call.idempotencyKey }
        : intentScopeValue(call.contract.scope, prepared.forFingerprint, {
            session: call.caller.session,
            now: this.#clock(),
          });
    const fingerprint = this.fingerprinter.intent({
      actor: call.caller.actor,
      tool: call.tool,
      channel: call.channel,
      target: call.target,
      credential_ref: call.credentialRef,
      method: call.method,
      arguments: prepared.forFingerprint,
      intent_scope: intentScope,
    });
    if (scope.kind === 'business_key' && call.idempotencyKey === undefined) {
      // The key names the action: the other arguments are left out of what is claimed, and the
      // whole request's fingerprint goes with it to tell a repeat from another use of the key.
      const named = this.fingerprinter.businessKey({
        actor: scope.shared ? null : call.caller.actor,
        tool: call.tool,
        channel: call.channel,
        target: call.target,
        credential_ref: call.credentialRef,
        method: call.method,
        key: { path: scope.path, value: businessKeyValue(scope.path, prepared.forFingerprint) },
      });
      return { fingerprint: named, requestDigest: fingerprint, preview: prepared.preview };
    }
    return { fingerprint, requestDigest: null, preview: prepared.preview };
  }

  /**
   * The status tool's answer for `ref`, as seen by `actor`. A stale dispatch is
   * turned into `unknown` here too, and a status probe is tried if the tool has one.
   */
  async status(ref: string, actor: string): Promise<ToolResult> {
    let record: ExecutionRecord | undefined;
    try {
      record = await this.store.get(ref);
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
          ref,
          detail: 'The store cannot be read right now.',
        });
      }
      throw error;
    }
    // Another actor's execution is not theirs to see: answer as if it did not exist.
    if (!record || record.actor !== actor) return idemAnswer(IDEM_CODES.IDEM_UNKNOWN_EXECUTION, { ref });
    // Handing the stored result to the agent here is a delivery too.
    return this.#describe(await this.#current(record), true);
  }

  /** A stale dispatch is `unknown` by now; an unknown one is probed, if its tool has a status probe. */
  async #current(record: ExecutionRecord): Promise<ExecutionRecord> {
    let current = record;
    if (current.state === 'dispatched' && isStale(current))
      current = (await this.#expire(current)) ?? current;
    if (current.state === 'unknown') current = (await this.#probe(current)) ?? current;
    return current;
  }

  /**
   * A deliberate repeat (the status tool's `action: "repeat"`): runs the intent
   * of `ref` again as a NEW execution, journaled as a repeat of it (`repeat`
   * events: `repeat_of` on the new one, `repeated_by` on the old). Only for the
   * actor it belongs to, and only once it has finished: while it runs, awaits
   * approval or has an unknown outcome, a repeat could make it happen twice, and
   * the answer says so. Repeating one ref twice (a lost answer, a resent request)
   * runs it once: the second gets the repeat's own execution.
   */
  async repeat(ref: string, caller: Caller, rerun: Rerun): Promise<ToolResult> {
    let seen: ExecutionRecord | undefined;
    try {
      const record = await this.store.get(ref);
      if (!record || record.actor !== caller.actor)
        return idemAnswer(IDEM_CODES.IDEM_UNKNOWN_EXECUTION, { ref });
      const repeatedAs = await this.#latestRepeat(record.id);
      if (repeatedAs) return this.status(repeatedAs, caller.actor);
      const prior = await this.#current(record);
      if (prior.state !== 'completed' && prior.state !== 'failed') return this.#repeatRefused(prior);
      const remembered = this.#recent.get(prior.id);
      const plan = remembered?.actor === caller.actor ? await rerun(remembered) : undefined;
      if (plan === undefined) return await this.#retireForRepeat(prior, caller);
      if ('answer' in plan) return plan.answer;
      const { call, dispatch } = plan;
      let identity: CallIdentity;
      try {
        identity = this.identify(call);
      } catch (error) {
        if (error instanceof InvalidInputError) {
          return idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `${error.reason}: ${error.message}` });
        }
        throw error;
      }
      const repeatable = this.#repeatable(call);
      // The old execution is retired in the claim itself, so that of two racing repeats one runs.
      let replacing: string | undefined = prior.id;
      for (let attempt = 0; attempt < MAX_SETTLE_ATTEMPTS; attempt++) {
        const token = newToken();
        const id = `exe_${this.#newId()}`;
        const needsApproval = this.#needsApproval(call);
        const claim = await this.store.claim(
          {
            id,
            fingerprint: identity.fingerprint,
            requestDigest: identity.requestDigest,
            actor: call.caller.actor,
            tool: call.tool,
            session: call.caller.session,
            replay: call.contract.replay,
            state: needsApproval ? 'awaiting_approval' : 'dispatched',
            ...(needsApproval ? {} : { dispatchTimeoutMs: call.contract.timeoutMs }),
            attachWindowMs: call.contract.attachWindowMs,
            claimToken: token,
            leaseOwner: this.owner,
            leaseMs: call.contract.leaseMs,
            argumentsPreview: identity.preview,
          },
          {
            ...(replacing ? { replacing } : {}),
            events: [
              this.#event('received', call, id, { preview: identity.preview }),
              this.#event('accepted', call, id),
              this.#event('repeat', call, id, { repeat_of: prior.id }),
              this.#event('repeat', call, prior.id, { repeated_by: id }),
              this.#event(needsApproval ? 'awaiting_approval' : 'dispatched', call, id),
            ],
          },
        );
        replacing = undefined;
        if (claim.won) {
          if (repeatable) this.#recent.remember(id, repeatable.call, repeatable.size);
          const answer =
            claim.record.state === 'dispatched'
              ? await this.#runDispatch(claim.record, token, call, dispatch, false)
              : await this.#runClaimed(claim.record, token, call, dispatch);
          if (answer === RETRY) continue;
          return answer._meta?.[META.executionId] === id && !idemCodeOf(answer)
            ? markExecuted(answer, id, prior.id)
            : answer;
        }
        // Someone else holds the intent now (another repeat, or a newer call): the usual rules.
        seen = claim.record;
        if (!claim.record) continue;
        const match = this.#match(claim.record, call, identity);
        if (match === 'attach') {
          const answer = await this.#attach(claim.record, call, dispatch);
          if (answer !== RETRY) return answer;
        } else if (match === 'replace') {
          replacing = claim.record.id;
        } else {
          return this.#keyConflict(claim.record, call);
        }
      }
      return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        detail: 'Too many concurrent changes to this action; the repeat was not started.',
      });
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      if (seen && !NOT_YET_DISPATCHED.includes(seen.state)) {
        return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, {
          ref: seen.id,
          state: seen.state,
          statusTool: this.statusTool,
          detail: 'An attempt was sent, and the execution record cannot be read right now.',
        });
      }
      return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        ref,
        detail: 'The execution record cannot be read or written right now, so nothing was repeated.',
      });
    }
  }

  /** The newest execution that repeats `id` (following repeats of repeats), if it was repeated. */
  async #latestRepeat(id: string): Promise<string | undefined> {
    let latest: string | undefined;
    let current = id;
    for (let hop = 0; hop < 64; hop++) {
      let next: string | undefined;
      for (const entry of await this.store.journalFor(current)) {
        const by = entry.kind === 'repeat' ? entry.detail.repeated_by : undefined;
        if (typeof by === 'string') next = by;
      }
      if (next === undefined) break;
      latest = current = next;
    }
    return latest;
  }

  /** Why an execution that has not finished is not repeated: its own state's answer, and the reason. */
  #repeatRefused(record: ExecutionRecord): ToolResult {
    const ctx = { ref: record.id, state: record.state, statusTool: this.statusTool };
    switch (record.state) {
      case 'awaiting_approval':
        return idemAnswer(IDEM_CODES.IDEM_AWAITING_APPROVAL, {
          ...ctx,
          detail: 'It cannot be repeated before it has run.',
        });
      case 'denied':
        return idemAnswer(IDEM_CODES.IDEM_DENIED, {
          ...ctx,
          detail: `A denied action is not repeated.${record.note ? ` Reason: ${record.note}` : ''}`,
        });
      case 'unknown':
        return idemAnswer(
          record.replay === 'review' ? IDEM_CODES.IDEM_REVIEW_REQUIRED : IDEM_CODES.IDEM_OUTCOME_UNKNOWN,
          {
            ...ctx,
            detail:
              'A repeat is refused while the outcome is unknown: it may already have happened, and a repeat could make it happen twice.',
          },
        );
      default:
        return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, {
          ...ctx,
          detail:
            'A repeat is refused while it runs, so that it does not happen twice; once it has finished, it can be repeated.',
        });
    }
  }

  /**
   * This process does not hold the arguments of `record` (another process ran
   * it, or this one restarted): the stored result is retired from matching, so
   * the model's next identical call runs as a new execution.
   */
  async #retireForRepeat(record: ExecutionRecord, caller: Caller): Promise<ToolResult> {
    await this.store.transition({
      id: record.id,
      from: [record.state],
      to: record.state,
      release: true,
      events: [
        {
          kind: 'repeat',
          executionId: record.id,
          actor: caller.actor,
          tool: record.tool,
          requestRef: caller.requestRef ?? null,
          detail: { released: true },
        },
      ],
    });
    return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
      ref: record.id,
      state: record.state,
      detail: `This process does not hold the arguments of ${record.id} (it ran in another process, or before a restart), so it cannot repeat it by itself. Its stored result is retired instead: call ${record.tool} again with the same arguments, and it will run as a new execution.`,
    });
  }

  /** A human approved an execution waiting for approval; the next matching call dispatches it. */
  async approve(ref: string, by: string): Promise<ExecutionRecord | undefined> {
    const record = await approveExecution(this.store, ref, by);
    if (record?.session) this.#approvedSessions.add(sessionKey(record.actor, record.session, record.tool));
    return record;
  }

  deny(ref: string, by: string, reason: string): Promise<ExecutionRecord | undefined> {
    return denyExecution(this.store, ref, by, reason);
  }

  resolve(
    ref: string,
    as: 'completed' | 'failed',
    by: string,
    note: string,
  ): Promise<ExecutionRecord | undefined> {
    return resolveExecution(this.store, ref, as, by, note);
  }

  /**
   * What a call does with the execution that holds its fingerprint: attach to it (DESIGN §4
   * table), replace it with a new execution, or — a business key used for another request —
   * get a conflict answer and send nothing.
   */
  #match(prior: ExecutionRecord, call: ToolCall, identity: CallIdentity): 'attach' | 'replace' | 'conflict' {
    if (!this.#attachable(prior, call.contract)) return 'replace';
    // The request digest covers the actor too: under a shared key, another actor's call is
    // never "the same request", so it is never handed the original's result.
    if (identity.requestDigest === null || prior.requestDigest === identity.requestDigest) return 'attach';
    // The target said no, so nothing took effect: a corrected call is a new attempt of the
    // action (DESIGN §4, row "failed"), not a second one.
    if (prior.state === 'failed') return 'replace';
    return 'conflict';
  }

  /** The key already names an execution of another request: say so, with its ref, and send nothing. */
  async #keyConflict(prior: ExecutionRecord, call: ToolCall): Promise<ToolResult> {
    const byOther = prior.actor !== call.caller.actor;
    await this.#journal([
      this.#event('attached', call, prior.id, {
        state: prior.state,
        conflict: byOther ? 'another_actor' : 'other_arguments',
      }),
    ]);
    return idemAnswer(IDEM_CODES.IDEM_KEY_CONFLICT, {
      ref: prior.id,
      state: prior.state,
      statusTool: this.statusTool,
      detail: byOther
        ? 'The key was used by another caller; only that caller (and an operator) can read its outcome.'
        : 'The key was used with other arguments.',
    });
  }

  #attachable(prior: ExecutionRecord, contract: ResolvedContract): boolean {
    if (prior.readAt >= prior.attachUntil) return false;
    // A repeat after a delivered result is a deliberate new action for such tools (e.g. deploy again).
    if (contract.afterCompletion === 'new' && prior.state === 'completed' && prior.deliveredAt !== null)
      return false;
    return true;
  }

  #needsApproval(call: ToolCall): boolean {
    const policy = call.contract.approval;
    if (policy === 'every_call') return true;
    if (policy === 'session') {
      const session = call.caller.session ?? '';
      return !this.#approvedSessions.has(sessionKey(call.caller.actor, session, call.tool));
    }
    return false;
  }

  /** A matching prior execution exists: the table in DESIGN §4, row by row. */
  async #attach(prior: ExecutionRecord, call: ToolCall, dispatch: Dispatch): Promise<Attempt> {
    const attached = this.#event('attached', call, prior.id, { state: prior.state });
    switch (prior.state) {
      case 'accepted':
      case 'authorized': {
        if (!isStale(prior)) return this.#answerFor(prior, [attached]);
        // Never dispatched and its claimer is gone: this same execution proceeds, once.
        const token = newToken();
        const taken = await this.store.transition({
          id: prior.id,
          from: [prior.state],
          to: 'dispatched',
          requireStale: true,
          holder: { token, owner: this.owner, leaseMs: call.contract.leaseMs },
          dispatchTimeoutMs: call.contract.timeoutMs,
          events: [attached, this.#event('dispatched', call, prior.id, { resumed: true })],
        });
        return taken ? this.#runDispatch(taken, token, call, dispatch, false) : RETRY;
      }
      case 'awaiting_approval':
      case 'denied':
        return this.#answerFor(prior, [attached]);
      case 'dispatched': {
        if (!isStale(prior)) return this.#answerFor(prior, [attached]);
        const expired = await this.#expire(prior, [attached]);
        return expired ? this.#recover(expired, call, dispatch) : RETRY;
      }
      case 'unknown':
        await this.#journal([attached]);
        return this.#recover(prior, call, dispatch);
      case 'completed':
      case 'failed':
        return this.#answerFor(prior, [attached]);
    }
  }

  /** We won a claim that waits for approval: ask, then dispatch if approved. */
  async #runClaimed(
    record: ExecutionRecord,
    token: string,
    call: ToolCall,
    dispatch: Dispatch,
  ): Promise<Attempt> {
    const decision = this.#approver
      ? await this.#approver({
          executionId: record.id,
          tool: record.tool,
          actor: record.actor,
          session: record.session,
          argumentsPreview: record.argumentsPreview,
        })
      : 'pending';
    if (decision === 'pending') return this.#answerFor(record);
    if (decision === 'denied') {
      const denied = await this.store.transition({
        id: record.id,
        from: ['awaiting_approval'],
        to: 'denied',
        token,
        holder: null,
        note: 'denied by the approver',
        events: [this.#event('denied', call, record.id)],
      });
      return this.#answerFor(denied ?? record);
    }
    if (call.contract.approval === 'session' && call.caller.session !== null) {
      this.#approvedSessions.add(sessionKey(call.caller.actor, call.caller.session, call.tool));
    }
    // The approval is recorded on its own first: if the dispatch mark then cannot be
    // written, the execution stays `authorized` and a later retry dispatches it.
    const authorized = await this.store.transition({
      id: record.id,
      from: ['awaiting_approval'],
      to: 'authorized',
      token,
      events: [this.#event('authorized', call, record.id)],
    });
    if (!authorized) return RETRY;
    const dispatched = await this.store.transition({
      id: record.id,
      from: ['authorized'],
      to: 'dispatched',
      token,
      holder: { token, owner: this.owner, leaseMs: call.contract.leaseMs },
      dispatchTimeoutMs: call.contract.timeoutMs,
      events: [this.#event('dispatched', call, record.id)],
    });
    if (!dispatched) return RETRY;
    return this.#runDispatch(dispatched, token, call, dispatch, false);
  }

  /**
   * Dispatches while holding the lease, renewing it as the target works. The
   * caller gets an answer by the contract's timeout at the latest; the work
   * goes on, and its real outcome is recorded when it arrives.
   */
  async #runDispatch(
    record: ExecutionRecord,
    token: string,
    call: ToolCall,
    dispatch: Dispatch,
    redispatch: boolean,
  ): Promise<ToolResult> {
    const { leaseMs, timeoutMs } = call.contract;
    // Taken before the handler runs: it may consume (and clear) its secret arguments.
    const secrets = secretValues(call.arguments, call.contract.argumentRules);
    const renewal = setInterval(
      () => {
        this.store.renewLease(record.id, token, leaseMs).catch((error) => {
          this.#logger.warn('lease renewal failed', { ref: record.id, error: String(error) });
        });
      },
      Math.max(10, Math.floor(leaseMs / 3)),
    );
    renewal.unref();

    type Done = { outcome: 'completed' | 'failed' | 'unknown'; result?: ToolResult; notDispatched?: string };
    const work = (async (): Promise<Done> => {
      try {
        const result = await dispatch({ executionId: record.id, redispatch });
        return { outcome: result.isError ? 'failed' : 'completed', result };
      } catch (error) {
        if (error instanceof NotDispatchedError) {
          const answer = idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, { ref: record.id, detail: error.message });
          return { outcome: 'failed', result: answer, notDispatched: error.message };
        }
        if (error instanceof OutcomeUnknownError || isAbort(error)) return { outcome: 'unknown' };
        return {
          outcome: 'failed',
          result: { isError: true, content: [{ type: 'text', text: errorText(error) }] },
        };
      }
    })();

    // Whichever comes first decides what the caller hears: the outcome (then it is
    // recorded as delivered in the same write) or the timeout (then it is `unknown`
    // for the caller, and the outcome, when it comes, is recorded but not delivered).
    let decided: 'outcome' | 'timeout' | undefined;
    const settled = work.then(async (done) => {
      clearInterval(renewal);
      decided ??= 'outcome';
      const delivering = decided === 'outcome' && done.outcome !== 'unknown';
      // The caller who sent the secrets gets the result as the target gave it; what is kept, and
      // replayed to whoever repeats the call later, never holds them (DESIGN §13).
      const outcome: StoredOutcome | undefined = done.result
        ? { result: redactSecrets(done.result, secrets) }
        : undefined;
      try {
        await this.store.transition({
          id: record.id,
          from: ['dispatched', 'unknown'],
          to: done.outcome,
          token,
          holder: done.outcome === 'unknown' ? undefined : null,
          ...(outcome ? { outcome } : {}),
          ...(delivering ? { delivered: true } : {}),
          // Nothing left: retire it, so that a retry is a fresh attempt rather than a replay of this one.
          ...(done.notDispatched ? { release: true } : {}),
          events: [
            this.#event('outcome', call, record.id, {
              state: done.outcome,
              ...(done.notDispatched ? { reason: 'not_dispatched' } : {}),
            }),
            ...(delivering ? [this.#event('delivered', call, record.id)] : []),
          ],
        });
      } catch (error) {
        // The caller still gets the truth; the record stays `dispatched` and turns `unknown` when the lease lapses.
        this.#logger.error('outcome could not be recorded', { ref: record.id, error: String(error) });
      }
      return done;
    });

    let timer: NodeJS.Timeout | undefined;
    let reason: 'timeout' | 'cancelled' = 'timeout';
    const deadline = new Promise<'timeout'>((resolve) => {
      const giveUp = (why: 'timeout' | 'cancelled') => {
        if (decided) return;
        decided = 'timeout';
        reason = why;
        resolve('timeout');
      };
      timer = setTimeout(() => giveUp('timeout'), timeoutMs);
      timer.unref();
      // The caller cancelled after dispatch (DESIGN §11): the effect may happen anyway, so the
      // outcome is unknown — not failed — and is recorded when (if) the target answers.
      call.signal?.addEventListener('abort', () => giveUp('cancelled'), { once: true });
    });
    const first = await Promise.race([settled, deadline]);
    clearTimeout(timer);

    if (first === 'timeout') {
      const unknown = await this.store
        .transition({
          id: record.id,
          from: ['dispatched'],
          to: 'unknown',
          token,
          events: [this.#event('outcome', call, record.id, { state: 'unknown', reason })],
        })
        .catch(() => undefined);
      settled.catch(() => {});
      return this.#answerFor(unknown ?? { ...record, state: 'unknown' });
    }
    if (first.outcome === 'unknown' || !first.result) return this.#answerFor({ ...record, state: 'unknown' });
    return markExecuted(first.result, record.id);
  }

  /** Dispatched, but the holder is gone: the outcome is unknown — never silently "not started". */
  async #expire(
    record: ExecutionRecord,
    extra: ActivityEventInput[] = [],
  ): Promise<ExecutionRecord | undefined> {
    return this.store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'unknown',
      requireStale: true,
      events: [
        ...extra,
        {
          kind: 'lease_expired',
          executionId: record.id,
          actor: record.actor,
          tool: record.tool,
          detail: { state: 'unknown' },
        },
      ],
    });
  }

  /** Unknown outcome: probe if the contract can, re-send with the same key only for `keyed`. */
  async #recover(record: ExecutionRecord, call: ToolCall, dispatch: Dispatch): Promise<Attempt> {
    const probed = await this.#probe(record, call.contract);
    if (probed) return this.#answerFor(probed);
    if (call.contract.replay === 'keyed') {
      const token = newToken();
      const again = await this.store.transition({
        id: record.id,
        from: ['unknown'],
        to: 'dispatched',
        holder: { token, owner: this.owner, leaseMs: call.contract.leaseMs },
        dispatchTimeoutMs: call.contract.timeoutMs,
        events: [this.#event('dispatched', call, record.id, { redispatch: true })],
      });
      return again ? this.#runDispatch(again, token, call, dispatch, true) : RETRY;
    }
    return this.#answerFor(record);
  }

  /** Asks the target what happened, if the tool has a status probe; records a definite answer. */
  async #probe(record: ExecutionRecord, contract?: ResolvedContract): Promise<ExecutionRecord | undefined> {
    const probe = contract?.statusProbe ?? this.#contracts.get(record.tool)?.statusProbe;
    if (!probe) return undefined;
    let answer: Awaited<ReturnType<typeof probe>>;
    try {
      answer = await probe({ executionId: record.id, tool: record.tool });
    } catch (error) {
      this.#logger.warn('status probe failed', { ref: record.id, error: String(error) });
      return undefined;
    }
    if (answer.outcome === 'unknown') return undefined;
    return this.store.transition({
      id: record.id,
      from: ['unknown'],
      to: answer.outcome,
      holder: null,
      outcome: { result: answer.result },
      events: [
        {
          kind: 'outcome',
          executionId: record.id,
          tool: record.tool,
          detail: { state: answer.outcome, by: 'status_probe' },
        },
      ],
    });
  }

  /** What a caller attached to `record` sees, per its state. */
  async #answerFor(record: ExecutionRecord, events: ActivityEventInput[] = []): Promise<ToolResult> {
    await this.#journal(events);
    return this.#describe(record, true);
  }

  async #describe(record: ExecutionRecord, deliver = false): Promise<ToolResult> {
    const ctx = { ref: record.id, state: record.state, statusTool: this.statusTool };
    switch (record.state) {
      case 'completed':
      case 'failed': {
        if (!record.outcome) return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, ctx);
        if (deliver && record.deliveredAt === null) await this.#delivered(record.id);
        return markReplayed(record.outcome.result, {
          ref: record.id,
          executedAt: record.dispatchedAt ?? record.createdAt,
          now: record.readAt,
          statusTool: this.statusTool,
        });
      }
      case 'accepted':
      case 'authorized':
      case 'dispatched':
        return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, ctx);
      case 'awaiting_approval':
        return idemAnswer(IDEM_CODES.IDEM_AWAITING_APPROVAL, ctx);
      case 'denied':
        return idemAnswer(IDEM_CODES.IDEM_DENIED, {
          ...ctx,
          ...(record.note ? { detail: `Reason: ${record.note}` } : {}),
        });
      case 'unknown':
        return idemAnswer(
          record.replay === 'review' ? IDEM_CODES.IDEM_REVIEW_REQUIRED : IDEM_CODES.IDEM_OUTCOME_UNKNOWN,
          ctx,
        );
    }
  }

  async #delivered(id: string, call?: ToolCall): Promise<void> {
    try {
      await this.store.markDelivered(id, [
        call ? this.#event('delivered', call, id) : { kind: 'delivered', executionId: id },
      ]);
    } catch (error) {
      this.#logger.warn('delivery could not be recorded', { ref: id, error: String(error) });
    }
  }

  async #journal(events: ActivityEventInput[]): Promise<void> {
    if (events.length === 0) return;
    try {
      await this.store.appendEvents(events);
    } catch (error) {
      this.#logger.warn('journal append failed', { error: String(error) });
    }
  }

  #event(
    kind: ActivityEventInput['kind'],
    call: ToolCall,
    executionId: string,
    detail: ActivityEventInput['detail'] = {},
  ): ActivityEventInput {
    return {
      kind,
      executionId,
      actor: call.caller.actor,
      tool: call.tool,
      requestRef: call.caller.requestRef ?? null,
      detail,
    };
  }
}

/** A claim token: unguessable, and cheap (randomUUID draws from a cached entropy pool). */
function newToken(): string {
  return randomUUID();
}

function sessionKey(actor: string, session: string, tool: string): string {
  return JSON.stringify([actor, session, tool]);
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * ULID randomness from a pooled buffer: the library's default draws a fresh
 * crypto.randomBytes(1) per character, which dominated the cost of an id.
 */
const pool = { bytes: Buffer.alloc(0), offset: 0 };
function pooledRandom(): number {
  if (pool.offset >= pool.bytes.length) {
    pool.bytes = randomBytes(4096);
    pool.offset = 0;
  }
  return (pool.bytes[pool.offset++] as number) / 256;
}
