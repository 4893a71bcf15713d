import type { ResolvedContract } from '../contracts/contract.js';
import type { KnownSecrets } from '../identity/redaction.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord, ExecutionStore } from '../store/types.js';
import type { Logger, ToolCall } from './call.js';
import type { InFlight } from './in-flight.js';
import type { LateOutcomes } from './late-outcome.js';
import type { SessionView } from './session-order.js';
import type { TaskChanges } from './task-changes.js';

/** What the engine's tasks are made with: how long they live, how often a client should ask. */
export interface TaskSettings {
  ttlMs: number | null;
  pollIntervalMs: number;
}

/**
 * A dispatch of this process waiting for its task's input (task-watch.ts): the input itself is
 * in the store, for any process to show and answer; an answer given here wakes the wait at once.
 */
export interface TaskInputWaiter {
  wake(): void;
}

/**
 * What every step of the engine's sequence (sequence.ts) is given: where
 * executions are kept, who this engine is, and where it reports. Each step is
 * a function of this and of the call in hand.
 */
export interface StepContext {
  readonly store: ExecutionStore;
  /** Lease owner name. */
  readonly owner: string;
  /** Name of the status tool quoted in advice texts. */
  readonly statusTool: string;
  readonly logger: Logger;
  /** Contracts by tool name, so the status tool can run a tool's status probe. */
  readonly contracts: ReadonlyMap<string, ResolvedContract>;
  /** Credentials and other secrets no argument carries: scrubbed from every result, stored or answered. */
  readonly knownSecrets: KnownSecrets;
  /** What tasks are made with (tasks.ts). */
  readonly tasks: TaskSettings;
  /** This process's dispatches that may become tasks, by execution id: tasks/cancel aborts them. */
  readonly taskCancels: Map<string, AbortController>;
  /** This process's task dispatches waiting for their client's input, by execution id (task-watch.ts). */
  readonly taskInputs: Map<string, TaskInputWaiter>;
  /**
   * Set once the process is closing: a following of an upstream's task that its closing
   * connection cuts short is not recorded, but left to the next holder (resume.ts).
   */
  readonly closing: { value: boolean };
  /** Told of every change this process makes to what a task reads (task-changes.ts): status notifications. */
  readonly taskChanges: TaskChanges;
  /** What this process has under way for calls with effects: a closing process waits for it (in-flight.ts). */
  readonly inFlight: InFlight;
  /** Outcomes held until the store answers (late-outcome.ts). */
  readonly lateOutcomes: LateOutcomes;
}

/**
 * Why a call does not attach to the execution that holds its intent, but replaces it with a new
 * one (journaled on both as `repeat {repeat_of | repeated_by, reason}`):
 * - `window_passed`: the holder is past its attach window;
 * - `after_failure`: the target said no, so nothing took effect: a new request is a new attempt;
 * - `moved_on`: its result was answered in this session, and the session moved on since;
 * - `after_delivery`: `after_completion: new`, and its result was delivered.
 */
export type ReplaceReason = 'window_passed' | 'after_failure' | 'moved_on' | 'after_delivery';

/**
 * What a step of the sequence hands back: the step that comes next, with what it needs. No step
 * calls another; the sequence (sequence.ts) takes each `Next` to the step it names.
 */
export type Next =
  /** This call won a claim that waits for approval: ask the approver. */
  | { step: 'ask'; record: ExecutionRecord }
  /** Attached to an execution awaiting approval: expire it if its time is up, else say it waits. */
  | { step: 'wait'; record: ExecutionRecord; events: ActivityEventInput[] }
  /** Nobody holds it and it was never dispatched (approved, or its claimer gone): take it over. */
  | { step: 'take_over'; record: ExecutionRecord; events: ActivityEventInput[] }
  /** Dispatched, and its holder's lease lapsed: the outcome is unknown. */
  | { step: 'expire'; record: ExecutionRecord; events: ActivityEventInput[] }
  /** The outcome is unknown: ask the target, or re-send under the same key (`keyed`). */
  | { step: 'recover'; record: ExecutionRecord; events: ActivityEventInput[] }
  /** This call holds the lease (`token`) of a dispatched execution: send it. */
  | { step: 'dispatch'; record: ExecutionRecord; token: string; redispatch: boolean }
  /** Nothing left to do but say what the record says (journaling `events` first). */
  | { step: 'answer'; record: ExecutionRecord; events?: ActivityEventInput[]; detail?: string }
  /** The business key names an execution of another request: a conflict, nothing sent. */
  | { step: 'conflict'; record: ExecutionRecord }
  /** The answer is known. */
  | { step: 'settled'; answer: ToolResult }
  /** The holder can no longer be attached to: claim again, retiring it in the same write. */
  | { step: 'replace'; id: string; reason: ReplaceReason }
  /** Lost a compare-and-set to another caller: claim again, and decide on what the store hands back. */
  | { step: 'retry' };

/** Appends journal events on their own; a failure is logged, not thrown: the journal never blocks an answer. */
export async function journal(ctx: StepContext, events: ActivityEventInput[]): Promise<void> {
  if (events.length === 0) return;
  try {
    await ctx.store.appendEvents(events);
  } catch (error) {
    ctx.logger.warn('journal append failed', { error: String(error) });
  }
}

/** A journal event about `call`, on execution `executionId`. */
export function callEvent(
  kind: ActivityEventInput['kind'],
  call: ToolCall,
  executionId: string,
  detail: ActivityEventInput['detail'] = {},
): ActivityEventInput {
  // The first event of a call (a new execution, or one it attached to) says which token it came with.
  const token = call.caller.token;
  return {
    kind,
    executionId,
    actor: call.caller.actor,
    tool: call.tool,
    requestRef: call.caller.requestRef ?? null,
    detail:
      token && (kind === 'received' || kind === 'attached')
        ? { ...detail, token: { issuer: token.issuer, jti: token.jti } }
        : detail,
  };
}

/**
 * Where the action goes, as the `accepted` event records it for the status
 * tool and `idem executions show`: channel, target, the server's identity
 * (`srv_…`, a keyed digest) where the target is only its handle, and credential NAME.
 */
export function actionRecord(call: ToolCall): Record<string, string> {
  return {
    channel: call.channel,
    target: call.target,
    ...(call.server ? { server: call.server } : {}),
    ...(call.credentialRef ? { credential: call.credentialRef } : {}),
  };
}

/** How one run of the sequence differs: a plain call, or a deliberate repeat of an earlier execution. */
export interface ClaimPlan {
  /** An execution the first claim retires in the same write (a repeat retires the one it repeats). */
  replacing?: string;
  /** Events journaled with the claim, after `received` and `accepted`. */
  events?: (id: string) => ActivityEventInput[];
  /** Called once this call won the claim for `id`, before it is dispatched. */
  won?: (id: string) => void;
  /** Set to the last record of this intent seen (see the callers' store-failure answers). */
  seen: { record?: ExecutionRecord };
  /** What this call's session has seen (session-order.ts): whether it moved on since a result. */
  session?: SessionView;
}
