import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CONTRACT_DEFAULTS } from '../defaults.js';
import type { ArgumentRules } from '../identity/argument-rules.js';
import type { JsonValue } from '../identity/canonical.js';
import { DurationSchema, durationMs, writtenDuration as written } from './duration.js';

/**
 * How a lost response is recovered for one tool (docs/contracts.md).
 * - `read_only`: no deduplication at all.
 * - `keyed`: the target honours our key, so re-sending with the same execution id is safe.
 * - `status`: an unknown outcome is resolved by asking the target (status probe).
 * - `review`: irreversible; an unknown outcome blocks until an operator resolves it.
 */
export type ReplayClass = 'read_only' | 'keyed' | 'status' | 'review';

/** Which retries count as "the same intent". */
export type IntentScope =
  | { kind: 'session' }
  | { kind: 'actor' }
  /**
   * The argument at `path` names the action: same tool + same key value is one
   * execution, whatever the other arguments. `shared`: one name space for
   * every actor (an order id from one system of record); otherwise per actor.
   */
  | { kind: 'business_key'; path: string; shared: boolean }
  | { kind: 'window'; ms: number };

export type ApprovalPolicy = 'none' | 'session' | 'every_call';

/** Whether a call may become an MCP task (docs/tasks.md). */
export type TaskPolicy = 'off' | 'optional' | 'required';

/** What a status probe learned about an execution whose outcome was unknown. */
export type ProbeAnswer =
  | { outcome: 'completed'; result: CallToolResult }
  | { outcome: 'failed'; result: CallToolResult }
  | { outcome: 'unknown' };

export type StatusProbe = (execution: { executionId: string; tool: string }) => Promise<ProbeAnswer>;

/** What a repeat of a completed call gets (docs/contracts.md, "Retry, repeat, new action"). */
export const AFTER_COMPLETION = ['new_if_moved_on', 'replay', 'new'] as const;
export type AfterCompletion = (typeof AFTER_COMPLETION)[number];

/** What a new request of a failed intent gets: a new attempt, or the stored failure. */
export const AFTER_FAILURE = ['new', 'replay'] as const;
export type AfterFailure = (typeof AFTER_FAILURE)[number];

/** What a JSON-RPC error an upstream answers after it took the call means (docs/contracts.md). */
export const JSONRPC_ERRORS = ['unknown', 'failed'] as const;
export type JsonRpcErrors = (typeof JSONRPC_ERRORS)[number];

const duration = DurationSchema;
const path = z.string().min(1);
/** The descriptions below state each default from CONTRACT_DEFAULTS, as a user writes it back. */
const DEFAULTS = CONTRACT_DEFAULTS;

/** The contract as written by a user (YAML in the gateway, an object in the library). */
export const ToolContractSchema = z
  .object({
    replay: z
      .enum(['read_only', 'keyed', 'status', 'review'])
      .describe(
        `What may happen when the outcome is unknown. read_only: no identity, no record, every call runs. keyed: the target deduplicates on the execution id, so an unknown dispatch is re-sent once with the same key. status: an unknown dispatch is resolved by status_probe. review: irreversible; an unknown outcome waits for an operator (IDEM_REVIEW_REQUIRED). Without a contract: read_only for a tool annotated readOnlyHint: true, else ${DEFAULTS.replay}.`,
      ),
    scope: z
      .union([
        z.enum(['session', 'actor']),
        z
          .object({
            business_key: path.describe(
              'The argument path whose value names the action (an order id): same tool and same value is one execution, whatever the other arguments; a call without it is refused (missing_business_key).',
            ),
            shared: z
              .boolean()
              .optional()
              .describe(
                'true: one name space for every actor (the same key from another actor is the same action); default false: per actor',
              ),
          })
          .strict(),
        z
          .object({
            window: duration.describe(
              'A time bucket of this length: the fallback when nothing in the arguments names the action.',
            ),
          })
          .strict(),
      ])
      .optional()
      .describe(
        `Which repeats are the same intent. actor: the same caller with the same arguments, from any session or process. session: only within one transport session. { business_key }: an argument names the action. { window }: a time bucket. Default ${DEFAULTS.scope}.`,
      ),
    attach_window: duration
      .optional()
      .describe(
        `How long after its creation an execution can be attached to (a repeat gets its answer). Default ${written(DEFAULTS.attachWindowMs)}; under scope: { window }, the window's length.`,
      ),
    after_completion: z
      .enum(AFTER_COMPLETION)
      .optional()
      .describe(
        `What a repeat of a completed call inside the window gets (docs/contracts.md, "Retry, repeat, new action"). new_if_moved_on: the stored result, unless in the same session another call with effects started after that result was answered and completed before the repeat: then the repeat is a new action. replay: always the stored result. new: a repeat after a delivered result is a new action. A completed but undelivered result is replayed under all three. Default ${DEFAULTS.afterCompletion}; ${DEFAULTS.afterCompletionNamed} under a business key or a window scope (they name the action).`,
      ),
    after_failure: z
      .enum(AFTER_FAILURE)
      .optional()
      .describe(
        `What a new request gets after the target answered the same intent with a failure. new: nothing took effect, so it is a new attempt, linked to the failed one; the same request re-sent (the same id) still gets the stored failure. replay: the stored failure, for tools whose failures can hide a partial effect. Default ${DEFAULTS.afterFailure}.`,
      ),
    jsonrpc_errors: z
      .enum(JSONRPC_ERRORS)
      .optional()
      .describe(
        `What a JSON-RPC error from an upstream MCP tool means, other than one that refuses the request before it runs (-32600, -32601, -32602: always the target's failure). unknown: the upstream took the call and may have acted before it failed, so the outcome is unknown and its task stays working. failed: this tool answers one only before it acts, so it is the target's failure: recorded failed (after_failure applies) and its task ends failed with the error. Default ${DEFAULTS.jsonrpcErrors}.`,
      ),
    fingerprint: z
      .object({
        ignore: z
          .array(path)
          .optional()
          .describe('Argument paths that do not change the effect (a trace id): left out of the identity.'),
        secrets: z
          .array(path)
          .optional()
          .describe(
            'Argument paths digested with the installation key before fingerprinting, never stored, logged or echoed; their values are replaced by [secret] in stored outcomes. Also inferred from writeOnly: true and format: password in the input schema.',
          ),
        defaults: z
          .record(z.string(), z.json())
          .optional()
          .describe('Values filled in when absent, so that omitted and given the default are one intent.'),
      })
      .strict()
      .optional()
      .describe(
        'How the arguments become the identity. Paths are dot-separated; * matches every member or element.',
      ),
    timeout: duration
      .optional()
      .describe(
        `When an unanswered dispatch becomes unknown for the caller; the work is not cancelled, and its outcome is recorded when it arrives. Default ${written(DEFAULTS.timeoutMs)}.`,
      ),
    lease: duration
      .optional()
      .describe(
        `How long a dispatcher's claim lives without renewal (renewed every third of it); a lapsed lease makes the execution unknown. Default ${written(DEFAULTS.leaseMs)}.`,
      ),
    approval: z
      .enum(['none', 'session', 'every_call'])
      .optional()
      .describe(
        `none: no approval. every_call: each new execution waits for a human (IDEM_AWAITING_APPROVAL). session: the first call of a session waits, later ones run (docs/approvals.md). Default ${DEFAULTS.approval}.`,
      ),
    approval_timeout: duration
      .optional()
      .describe(
        'An approval request undecided this long ends as denied (expired). Default and maximum: attach_window (a retry must still find the request).',
      ),
    allow_actors: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'Actors that run without asking under approval: session (never under every_call, which always asks).',
      ),
    elicitation: z
      .enum(['allow', 'never'])
      .optional()
      .describe(
        `allow: ask the client's human by MCP elicitation when the client declared the capability; never: only an operator decides (idem approvals, the console). Default ${DEFAULTS.elicitation}.`,
      ),
    task: z
      .enum(['off', 'optional', 'required'])
      .optional()
      .describe(
        `Whether a call may become an MCP task, for a client that can take one (docs/tasks.md). off: never; optional: when it has not finished within task_after; required: always, and a client that cannot take a task is refused before anything runs. Default ${DEFAULTS.task}, or optional for an upstream tool that lists execution.taskSupport.`,
      ),
    task_after: duration
      .optional()
      .describe(
        `How long a call may run before it is answered as a task (0s: at once). Default 0s under task: required, ${written(DEFAULTS.taskAfterMs)} under task: optional. At most timeout.`,
      ),
    /** Library: a function. The gateway's config gives a declarative probe instead. */
    status_probe: z
      .custom<StatusProbe>((v) => typeof v === 'function')
      .optional()
      .describe(
        "How replay: status learns an unknown outcome. Library: async ({ executionId, tool }) => { outcome: 'completed' | 'failed', result } | { outcome: 'unknown' }.",
      ),
  })
  .strict();

export type ToolContract = z.input<typeof ToolContractSchema>;

/** A contract with every default filled in: what the engine acts on. */
export interface ResolvedContract {
  replay: ReplayClass;
  scope: IntentScope;
  attachWindowMs: number;
  afterCompletion: AfterCompletion;
  afterFailure: AfterFailure;
  /** A JSON-RPC error the upstream answers after it took the call: unknown (default), or the target's failure. */
  jsonrpcErrors: JsonRpcErrors;
  argumentRules: ArgumentRules;
  /** When an unanswered dispatch becomes `unknown` (the caller is told so; the work may still finish). */
  timeoutMs: number;
  /** How long a dispatcher's claim lasts without renewal; it renews at a third of this. */
  leaseMs: number;
  approval: ApprovalPolicy;
  /** An approval request undecided this long ends as denied (`expired`). At most attachWindowMs. */
  approvalTimeoutMs: number;
  /** Actors that run without asking under `approval: session` (ladder step "allowlisted actor"). */
  allowActors: readonly string[];
  /** Whether the client's human may decide by MCP elicitation, or only an operator. */
  elicitation: 'allow' | 'never';
  statusProbe: StatusProbe | undefined;
  /** Whether a call may become an MCP task (for a client that can take one), and after how long. */
  task: TaskPolicy;
  taskAfterMs: number;
  /** True when no contract was declared and these are the cautious defaults. */
  defaulted: boolean;
}

/** The subset of MCP tool annotations that defaults are read from. */
export interface ToolAnnotationsLike {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
  destructiveHint?: boolean;
  /**
   * Not an annotation: the listing's `execution.taskSupport`, read beside them (an upstream that can
   * run the tool as a task makes `task: optional` the default).
   */
  taskSupport?: 'forbidden' | 'optional' | 'required';
}

/**
 * Fills in a contract (docs/contracts.md). With none declared: `readOnlyHint: true`
 * means `read_only`; anything else is `review`, scoped to the actor with a
 * 15-minute window — a restarted agent repeating the call is still recognised.
 */
export function resolveContract(
  declared: ToolContract | undefined,
  annotations: ToolAnnotationsLike | undefined,
  extraSecrets: readonly string[] = [],
): ResolvedContract {
  const parsed = declared === undefined ? undefined : ToolContractSchema.parse(declared);
  const replay: ReplayClass =
    parsed?.replay ?? (annotations?.readOnlyHint === true ? 'read_only' : CONTRACT_DEFAULTS.replay);
  const scope = resolveScope(parsed?.scope);
  if (scope.kind === 'business_key' && parsed?.fingerprint?.ignore?.includes(scope.path)) {
    // The key would be removed before it is read: every call would be refused as missing it.
    throw new Error(
      `scope.business_key "${scope.path}" is also in fingerprint.ignore; the key names the action`,
    );
  }
  const attachWindowMs =
    parsed?.attach_window !== undefined
      ? durationMs(parsed.attach_window, 'attach_window')
      : scope.kind === 'window'
        ? scope.ms
        : CONTRACT_DEFAULTS.attachWindowMs;
  const approvalTimeoutMs =
    parsed?.approval_timeout !== undefined
      ? durationMs(parsed.approval_timeout, 'approval_timeout')
      : attachWindowMs;
  if (approvalTimeoutMs > attachWindowMs) {
    // Past the window a retry no longer finds the waiting execution: it would claim a new one and
    // ask again, while the first request still sat in the queue, approvable and never dispatched.
    const window =
      parsed?.attach_window !== undefined
        ? String(parsed.attach_window)
        : `${written(attachWindowMs)}, ${scope.kind === 'window' ? 'from scope.window' : 'the default'}`;
    throw new Error(
      `approval_timeout must not be longer than attach_window (${String(parsed?.approval_timeout)} > ${window}): a retry after the window would not find the waiting request. Set attach_window: ${String(parsed?.approval_timeout)} (or longer), or approval_timeout: ${written(attachWindowMs)} (or shorter)`,
    );
  }
  const timeoutMs =
    parsed?.timeout !== undefined ? durationMs(parsed.timeout, 'timeout') : CONTRACT_DEFAULTS.timeoutMs;
  const { task, taskAfterMs } = resolveTask(parsed, replay, annotations, timeoutMs);
  return {
    replay,
    scope,
    attachWindowMs,
    afterCompletion: parsed?.after_completion ?? defaultAfterCompletion(scope),
    afterFailure: parsed?.after_failure ?? CONTRACT_DEFAULTS.afterFailure,
    jsonrpcErrors: parsed?.jsonrpc_errors ?? CONTRACT_DEFAULTS.jsonrpcErrors,
    argumentRules: {
      ignore: parsed?.fingerprint?.ignore ?? [],
      secrets: [...new Set([...(parsed?.fingerprint?.secrets ?? []), ...extraSecrets])],
      defaults: (parsed?.fingerprint?.defaults ?? {}) as Record<string, JsonValue>,
    },
    timeoutMs,
    leaseMs: parsed?.lease !== undefined ? durationMs(parsed.lease, 'lease') : CONTRACT_DEFAULTS.leaseMs,
    approval: parsed?.approval ?? CONTRACT_DEFAULTS.approval,
    approvalTimeoutMs,
    allowActors: parsed?.allow_actors ?? [],
    elicitation: parsed?.elicitation ?? CONTRACT_DEFAULTS.elicitation,
    statusProbe: parsed?.status_probe,
    task,
    taskAfterMs,
    defaulted: parsed === undefined,
  };
}

/**
 * Whether a call may become a task, and when. A read-only tool never does: nothing of it is
 * recorded, so nothing durable could answer `tasks/get`.
 */
function resolveTask(
  parsed: z.output<typeof ToolContractSchema> | undefined,
  replay: ReplayClass,
  annotations: ToolAnnotationsLike | undefined,
  timeoutMs: number,
): { task: TaskPolicy; taskAfterMs: number } {
  if (replay === 'read_only') {
    if (parsed?.task !== undefined && parsed.task !== 'off')
      throw new Error(
        `task: ${parsed.task} needs a tool whose calls are recorded; replay: read_only records nothing (use keyed, status or review)`,
      );
    return { task: 'off', taskAfterMs: 0 };
  }
  const listed = annotations?.taskSupport;
  const task: TaskPolicy =
    parsed?.task ?? (listed === 'optional' || listed === 'required' ? 'optional' : CONTRACT_DEFAULTS.task);
  const taskAfterMs =
    parsed?.task_after !== undefined
      ? durationMs(parsed.task_after, 'task_after')
      : task === 'required'
        ? 0
        : CONTRACT_DEFAULTS.taskAfterMs;
  if (task !== 'off' && taskAfterMs > timeoutMs)
    throw new Error(
      `task_after must not be longer than timeout (${String(parsed?.task_after)} > ${written(timeoutMs)}): past the timeout the call is unknown, not a task to wait for`,
    );
  return { task, taskAfterMs };
}

/**
 * A business key or a time bucket says what one action is, so a repeat under it is that
 * action again: replayed. Without either, a repeat once the session has moved on is a new one.
 */
function defaultAfterCompletion(scope: IntentScope): AfterCompletion {
  return scope.kind === 'business_key' || scope.kind === 'window'
    ? CONTRACT_DEFAULTS.afterCompletionNamed
    : CONTRACT_DEFAULTS.afterCompletion;
}

function resolveScope(scope: z.output<typeof ToolContractSchema>['scope']): IntentScope {
  const declared = scope ?? CONTRACT_DEFAULTS.scope;
  if (declared === 'actor') return { kind: 'actor' };
  if (declared === 'session') return { kind: 'session' };
  if ('business_key' in declared) {
    // Per actor unless said otherwise: a shared key lets any actor see, and hold, an action by
    // its name, which must be a deliberate choice (docs/contracts.md, "Business keys").
    return { kind: 'business_key', path: declared.business_key, shared: declared.shared ?? false };
  }
  const windowMs = durationMs(declared.window, 'scope.window');
  if (windowMs <= 0) throw new Error('scope.window must be longer than zero');
  return { kind: 'window', ms: windowMs };
}
