import type { ApprovalView } from '../approval/view.js';
import type { ResolvedContract } from '../contracts/contract.js';
import type { TokenRef } from '../identity/actor.js';
import type { TaskGeneration } from '../protocol/tasks.js';
import type { ToolResult } from '../store/outcome.js';
import type { ApprovalChannel, UpstreamTaskHandle } from '../store/types.js';
import type { RepeatableCall } from './recent-calls.js';

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
  /** The OAuth token the call came with (issuer, jti), for the journal. */
  token?: TokenRef;
}

/** One tool call with effects, as the engine sees it. */
export interface ToolCall {
  tool: string;
  channel: string;
  /** Where the effect lands, as the operator names it (an upstream's configured name): recorded and shown. */
  target: string;
  /**
   * What the far side IS, when `target` is only its handle (ActionChannel.server: an upstream's
   * `srv_…` identity): the canonical record's target in its place. Absent: `target` is.
   */
  server?: string;
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
  /**
   * Set by the channel when it could not resolve the call's target or
   * credential (an unknown host, a missing secret): why. The ladder denies the
   * call and nothing is claimed or sent.
   */
  unresolved?: string;
  /**
   * Who to ask when this call needs approval, instead of the engine's own
   * approver: the gateway asks the client's human by MCP elicitation on the
   * caller's own session.
   */
  approver?: Approver;
  /**
   * The channel may still refuse the call when it dispatches, before anything leaves (an HTTP
   * tool's address guard: ActionChannel.checksBeforeSending): the claim then stops at `accepted`,
   * and the dispatch is recorded when the channel says it is sending (DispatchContext.sending) —
   * a refusal before that is `denied`, never a dispatch.
   */
  checksBeforeSending?: boolean;
  /**
   * The caller can take an MCP task for this call (docs/tasks.md): which generation of the
   * protocol it speaks, and the time to live it asked for (2025-11-25). Absent: it cannot, and
   * answers are what they always were.
   */
  task?: TaskRequest;
}

/** A caller able to take a task (ToolCall.task). */
export interface TaskRequest {
  generation: TaskGeneration;
  ttlMs?: number;
  /**
   * Held while the caller's client holds questions it was asked in the call's own answer (the
   * gateway's input round, a 2026-07-28 client meeting a 2025-era upstream): the call is not
   * answered as a task meanwhile — its client will call again with the answers, and hears the
   * task then.
   */
  hold?: TaskHold;
}

/** See TaskRequest.hold: `then` runs once nothing holds the call (at once when nothing does). */
export interface TaskHold {
  whenFree(then: () => void): void;
}

/** A request a target pushes while it works (DispatchContext.askPushed). */
export interface PushedRequest {
  method: string;
  params?: unknown;
}

/** What the target is answered: the client's result, or an error. */
export type PushedReply = { result: Record<string, unknown> } | { error: { code: number; message: string } };

export interface DispatchContext {
  /** The execution id: pass it on as the target's idempotency key. null for read-only tools. */
  executionId: string | null;
  /** True when this is a re-send of an earlier dispatch with the same key (replay class `keyed`). */
  redispatch: boolean;
  /**
   * Aborted when the call's task is cancelled (tasks/cancel) after it was sent: pass it on, as the
   * caller's own cancel is (the outcome is then unknown unless the target answers).
   */
  signal?: AbortSignal;
  /** The target answered with a task of its own: resolves once that is on the execution's record. */
  upstreamTask?(handle: UpstreamTaskHandle): Promise<void>;
  /**
   * Present when the call checks before sending (ToolCall.checksBeforeSending): call it just
   * before the first byte leaves. It records the dispatch, and throws NotDispatchedError when that
   * cannot be written (nothing may be sent then).
   */
  sending?(): Promise<void>;
  /** Once the call is a task: the target's request for input, answered by the task's client (ActionDispatch.askInput). */
  askInput?(
    requests: Record<string, { method: string; params?: unknown }>,
  ): Promise<Record<string, unknown> | undefined>;
  /** Once the call is a 2026-07-28 task: a request the target pushes while it works, carried into the task (ActionDispatch.askPushed). */
  askPushed?(request: PushedRequest): Promise<PushedReply> | undefined;
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
  /** What a surface also logs when it has them (upstream starts, restarts): src/support/log.ts. */
  info?(message: string, fields?: Record<string, unknown>): void;
  debug?(message: string, fields?: Record<string, unknown>): void;
}

/** What an approver is shown (see ApprovalView), plus the names earlier versions used. */
export type ApproverRequest = ApprovalView & { executionId: string; argumentsPreview: string };

/**
 * An approver's answer: decided (with who and through what, for the journal;
 * by default `approver` via `api`), or `pending` — a human decides later (the
 * operator queue). A throw counts as pending.
 */
export type ApproverAnswer =
  | 'approved'
  | 'denied'
  | 'pending'
  | { decision: 'approved' | 'denied'; by?: string; via?: ApprovalChannel; reason?: string };

/** Decides "may this caller run this?" for contracts that require approval (docs/approvals.md). */
export type Approver = (request: ApproverRequest) => Promise<ApproverAnswer>;
