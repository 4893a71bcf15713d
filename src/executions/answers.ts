import { DEFAULT_STATUS_TOOL } from '../defaults.js';
import { IDEM_CODES, type IdemCode } from '../errors.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionState } from './states.js';

/** `_meta` keys Idem sets on results. */
export const META = {
  executionId: 'io.idem/execution-id',
  replayed: 'io.idem/replayed',
  /** On a replay: when the stored result was produced (ISO 8601). */
  executedAt: 'io.idem/executed-at',
  /** On a replay: the status-tool call that runs the action again on purpose. */
  repeat: 'io.idem/repeat',
  /** On the result of a deliberate repeat: the execution it repeated. */
  repeatOf: 'io.idem/repeat-of',
  /** On a status answer: where the action went — `{channel, target, credential}` (the credential's NAME). */
  action: 'io.idem/action',
  /** Where a JSON-RPC error from a target travels inside a stored tool result, to be sent on as that error. */
  jsonrpcError: 'io.idem/jsonrpc-error',
  /** On a status answer: the caller's MCP task of this execution, when it has one (docs/tasks.md). */
  taskId: 'io.idem/task-id',
  /** On an answer that is a task (docs/tasks.md): the task's view, which the front renders in the client's revision. */
  task: 'io.idem/task',
} as const;

/** The status tool, as the gateway and the library both publish it. */
export const STATUS_TOOL_DESCRIPTION =
  'Look up an action that returned IDEM_IN_FLIGHT, IDEM_OUTCOME_UNKNOWN, IDEM_REVIEW_REQUIRED, IDEM_AWAITING_APPROVAL, IDEM_APPROVED or IDEM_KEY_CONFLICT: ' +
  'pass the "ref" from that answer; returns the stored result once the action has finished. ' +
  'A result marked as replayed is a stored one: nothing ran again. To run a finished action again on purpose ' +
  '(a fresh result of a read, or the action done again), pass its "ref" with "action": "repeat"; it runs as a new execution.';

export const STATUS_ACTION_DESCRIPTION =
  '"status" (default): look the action up. "repeat": run a finished (completed or failed) action again, as a new execution; refused while it runs, awaits approval or has an unknown outcome.';

/**
 * Not read-only: `action: "repeat"` runs an action again, and that action may
 * be destructive. Idempotent: repeating one ref twice runs it once.
 */
export const STATUS_TOOL_ANNOTATIONS = { readOnlyHint: false, idempotentHint: true, openWorldHint: true };

/** What `structuredContent.idem` holds on every answer that is not a plain result (docs/errors.md). */
export interface IdemAnswerInfo {
  code: IdemCode;
  ref: string | null;
  state: ExecutionState | null;
  advice: string;
}

export interface AnswerContext {
  ref?: string | null;
  state?: ExecutionState | null;
  /** Name of the status tool the agent should call. */
  statusTool?: string;
  /** Extra detail for the text (a denial reason, why nothing ran). */
  detail?: string;
}

/**
 * The text a model reads. Each says what happened and exactly what to do
 * next; none reports a failure for an outcome that is merely unknown.
 */
function textAndAdvice(code: IdemCode, ctx: AnswerContext): { text: string; advice: string } {
  const ref = ctx.ref ?? null;
  const status = ctx.statusTool ?? DEFAULT_STATUS_TOOL;
  const check = ref ? `call ${status} with {"ref":"${ref}"}` : `call ${status}`;
  const detail = ctx.detail ? ` ${asSentence(ctx.detail)}` : '';
  switch (code) {
    case IDEM_CODES.IDEM_IN_FLIGHT:
      return {
        advice: `Do not repeat the call. Wait a few seconds, then ${check} to get its result.`,
        text: `This action is already being executed (ref ${ref}). It was not started a second time.${detail}`,
      };
    case IDEM_CODES.IDEM_OUTCOME_UNKNOWN:
      return {
        advice: `Do not retry it as a new action. ${cap(check)} to learn whether it happened, or tell the user it is unresolved.`,
        text: `The action was sent, but its outcome is unknown (ref ${ref}): it may or may not have happened.${detail}`,
      };
    case IDEM_CODES.IDEM_REVIEW_REQUIRED:
      return {
        advice: `Do not retry. Tell the user that an operator must resolve ${ref} (idem executions resolve ${ref}); ${check} later to see the resolution.`,
        text: `The action's outcome is unknown (ref ${ref}) and the tool is irreversible: it may or may not have happened, and it will not be sent again without a human's review.${detail}`,
      };
    case IDEM_CODES.IDEM_AWAITING_APPROVAL:
      return {
        advice: `It is queued; calling it again changes nothing until it is decided. Ask the user to approve ${ref} (an operator runs: idem approvals approve ${ref}), then ${check}.`,
        text: `The action is waiting for a human's approval (ref ${ref}). Nothing has been executed yet.${detail}`,
      };
    case IDEM_CODES.IDEM_APPROVED:
      return {
        advice:
          'To run it now, call the same tool again with the same arguments: it runs once, as this execution.',
        text: `The action was approved (ref ${ref}) and has not been executed yet.${detail}`,
      };
    case IDEM_CODES.IDEM_DENIED:
      return {
        advice: 'Do not retry the same call. Tell the user it was denied, and why.',
        text: `The action was denied and was not executed${ref ? ` (ref ${ref})` : ''}.${detail}`,
      };
    case IDEM_CODES.IDEM_NOT_EXECUTED:
      return {
        advice: 'It is safe to retry the same call.',
        text: `The action was NOT executed: nothing happened.${detail}`,
      };
    case IDEM_CODES.IDEM_RECEIPTS_FULL:
      return {
        advice: 'Nothing happened. Retry the same call in a few seconds.',
        text: 'The action was NOT executed: too many requests are being tracked right now.',
      };
    case IDEM_CODES.IDEM_INVALID_INPUT:
      return {
        advice: 'Nothing was executed. Fix the arguments and call again.',
        text: `The arguments cannot be processed, so the action was not executed.${detail}`,
      };
    case IDEM_CODES.IDEM_KEY_CONFLICT:
      return {
        advice: `Do not repeat this call: nothing will be sent under this key while ${ref} holds it. For a different action, call again with a new key. For the original's outcome, ${check} if you started it, or ask the user.`,
        text: `This key already names another execution (ref ${ref}, state ${ctx.state ?? 'unknown'}), so this call was NOT executed.${detail}`,
      };
    case IDEM_CODES.IDEM_UNKNOWN_EXECUTION:
      return {
        advice: 'Check the ref: use the exact "ref" value from an earlier answer.',
        text: `No execution ${ref ?? ''} is visible to you.`,
      };
    case IDEM_CODES.IDEM_INSUFFICIENT_SCOPE:
      return {
        advice:
          'Do not retry with the same token. Get a token with the scope named (re-authorize), then call again.',
        text: `The action was NOT executed: your access token lacks a scope it needs.${detail}`,
      };
    case IDEM_CODES.MCP_REQUEST_ID_REUSED:
      return {
        advice: 'Send the new request with a new id.',
        text: 'This request id was already used in this session for a different request; nothing was run.',
      };
    case IDEM_CODES.IDEM_SESSIONS_FULL:
      // The front says this itself, as a JSON-RPC error to an initialize (front/session-table.ts);
      // here so that every code has its words.
      return {
        advice: 'End the sessions you no longer use, or retry after one of them finishes.',
        text: 'No session was started: the open sessions are at their cap, each with something in progress.',
      };
  }
}

/**
 * A detail is often an error's message ("fetch failed"), and the advice follows
 * it: without a full stop the two read as one sentence ("fetch failed Do not retry").
 */
function asSentence(s: string): string {
  const trimmed = s.trimEnd();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** An `isError` tool result carrying `structuredContent.idem`. */
export function idemAnswer(code: IdemCode, ctx: AnswerContext = {}): ToolResult {
  const { text, advice } = textAndAdvice(code, ctx);
  const idem: IdemAnswerInfo = { code, ref: ctx.ref ?? null, state: ctx.state ?? null, advice };
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${text} ${advice}` }],
    structuredContent: { idem },
    ...(ctx.ref ? { _meta: { [META.executionId]: ctx.ref } } : {}),
  };
}

/** Reads the Idem code from a result, if it is an Idem answer. */
export function idemCodeOf(result: ToolResult): IdemCode | undefined {
  const idem = (result.structuredContent as { idem?: IdemAnswerInfo } | undefined)?.idem;
  return idem?.code;
}

/**
 * A completed execution's result — fresh or replayed, not a failure the target reported, not
 * an Idem answer, not a task to poll — of `ref` when given: what a session counts as answered.
 */
export function isResultOf(result: ToolResult, ref?: string): boolean {
  if (result.isError || idemCodeOf(result) !== undefined || result._meta?.[META.task] !== undefined)
    return false;
  return ref === undefined || result._meta?.[META.executionId] === ref;
}

/** What a replayed result says about where it came from. */
export interface ReplayInfo {
  ref: string;
  /** When the stored result was produced (store clock, ms since the epoch). */
  executedAt: number;
  /** The store's clock now, for "how long ago". */
  now: number;
  statusTool: string;
}

/**
 * A stored result as handed back again. A model cannot tell a stored answer
 * from a fresh one unless it is told, and it reads the first text first: a
 * text item goes BEFORE the original content, saying that nothing ran now,
 * when the stored result was made, and how to run it again on purpose. Measured
 * (docs/contracts.md, "Retry, repeat, new action"): with the note after, a
 * stale "Successfully wrote…" is what a replay to a restarted agent says first.
 * The original content and `structuredContent` stay as they were, so clients
 * that parse them still can; `_meta` says the same for programs.
 */
export function markReplayed(result: ToolResult, info: ReplayInfo): ToolResult {
  const repeat = { tool: info.statusTool, arguments: { ref: info.ref, action: 'repeat' } };
  const at = new Date(info.executedAt).toISOString();
  // True for every replay: the retry of an answer that was lost, and a repeat no signal tells from one.
  const note =
    `[idem] Replayed, not run again: below is the stored result of execution ${info.ref}, which ran at ${at} ` +
    `(${ago(info.now - info.executedAt)}); nothing was run now. If an earlier answer did not reach you, this is it. ` +
    `If you need a fresh result, or the action done again, call ${info.statusTool} with ${JSON.stringify(repeat.arguments)}.`;
  return {
    ...result,
    content: [{ type: 'text', text: note }, ...(result.content ?? [])],
    _meta: {
      ...result._meta,
      [META.executionId]: info.ref,
      [META.replayed]: true,
      [META.executedAt]: at,
      [META.repeat]: repeat,
    },
  };
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 1) return 'less than a second ago';
  if (s < 120) return `${s} s ago`;
  const min = Math.round(s / 60);
  if (min < 120) return `${min} min ago`;
  return `${Math.round(min / 60)} h ago`;
}

/** A fresh result, tagged with the execution that produced it (and the one it repeats, if deliberate). */
export function markExecuted(result: ToolResult, ref: string, repeatOf?: string): ToolResult {
  return {
    ...result,
    _meta: { ...result._meta, [META.executionId]: ref, ...(repeatOf ? { [META.repeatOf]: repeatOf } : {}) },
  };
}
