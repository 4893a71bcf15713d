import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import { OutcomeUnknownError, UpstreamClosedError, UpstreamUnavailableError } from '../../errors.js';
import { ENVELOPE } from '../../protocol/revisions.js';
import type { ToolResult } from '../../store/outcome.js';
import type { UpstreamConnection } from './upstream.js';
import type { UpstreamReply } from './upstream-spec.js';

/** The 2026-07-28 tasks extension, as a request declares it in its client capabilities (SEP-2663). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** v1: 2025-11-25 experimental tasks (`params.task`, nested answer); v2: the 2026-07-28 extension (flat). */
export type UpstreamTaskGeneration = 'v1' | 'v2';

/** A task an upstream answered a `tools/call` with, as its CreateTaskResult describes it. */
export interface CreatedTask {
  generation: UpstreamTaskGeneration;
  taskId: string;
  status: string;
  /** How often the upstream asks to be polled; undefined when it did not say. */
  pollIntervalMs: number | undefined;
  /** When the upstream created it (its clock); undefined when it gave no readable time. */
  createdAt: number | undefined;
}

/** How an upstream's task ended: the tool's result (an `isError` one included), or the request's JSON-RPC error. */
export type TaskEnd =
  | { result: Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } };

/** What one look at the task (its `tasks/get` answer) says to do next. */
export type TaskStep =
  /** Still running, or waiting for input Idem does not relay yet: look again after `afterMs`. */
  | { next: 'poll'; status: 'working' | 'input_required'; afterMs: number }
  /** v1, terminal: `tasks/result` holds how it ended. */
  | { next: 'result'; status: 'completed' | 'failed' | 'cancelled' }
  /** v2, terminal: how it ended is in the answer itself. */
  | { next: 'end'; end: TaskEnd }
  /** Nothing says how it ended: the outcome is unknown, for this reason. */
  | { next: 'unknown'; reason: string };

/** Poll no faster than this, whatever an upstream asks: an interval of 0 would be a busy loop. */
const MIN_POLL_MS = 50;
/** Poll at least this often: an upstream asking for hours would hold the dispatch without a look. */
const MAX_POLL_MS = 60_000;
/** The interval when the upstream names none (the SDK's own default). */
const DEFAULT_POLL_MS = 1_000;
/** JSON-RPC "invalid params": the answer to a task id the receiver does not know. */
const TASK_NOT_FOUND = -32602;

/**
 * The upstream's CreateTaskResult, read: v1 `{ task: { taskId, status, pollInterval, … } }` or v2
 * flat with `resultType: "task"`. Undefined for any other result (an ordinary CallToolResult).
 * A result that says it is a task but names no task id cannot be followed: its outcome is unknown.
 */
export function createdTaskOf(result: unknown): CreatedTask | undefined {
  if (!isRecord(result)) return undefined;
  if (result.resultType === 'task') return taskOrUnfollowable('v2', result, result.pollIntervalMs);
  // A v1 answer is the task alone: an object that also has content is a tool's result.
  if (isRecord(result.task) && !('content' in result))
    return taskOrUnfollowable('v1', result.task, result.task.pollInterval);
  return undefined;
}

function taskOrUnfollowable(
  generation: UpstreamTaskGeneration,
  task: Record<string, unknown>,
  pollInterval: unknown,
): CreatedTask {
  if (typeof task.taskId !== 'string' || task.taskId === '')
    throw new OutcomeUnknownError(
      'the upstream answered with a task that names no task id: it cannot be followed',
    );
  const createdAt = typeof task.createdAt === 'string' ? Date.parse(task.createdAt) : Number.NaN;
  return {
    generation,
    taskId: task.taskId,
    status: typeof task.status === 'string' ? task.status : 'working',
    pollIntervalMs: positive(pollInterval),
    createdAt: Number.isFinite(createdAt) ? createdAt : undefined,
  };
}

/**
 * What a `tasks/get` answer means (the mapping the follower runs on, one answer at a time).
 * `input_required` is treated as still working: answering an upstream task's input is a later step,
 * so the follower waits (and gives up at the dispatch's deadline). `cancelled` ends in an unknown
 * outcome unless the task carries a result: the upstream stopped, and whether it acted first is
 * not something a cancel says.
 */
export function taskStepOf(generation: UpstreamTaskGeneration, task: unknown, pollMs: number): TaskStep {
  if (!isRecord(task) || typeof task.status !== 'string')
    return { next: 'unknown', reason: 'the upstream answered tasks/get with something that is not a task' };
  const status = task.status;
  if (status === 'working' || status === 'input_required')
    return { next: 'poll', status, afterMs: pollIntervalOf(task, generation) ?? pollMs };
  if (status !== 'completed' && status !== 'failed' && status !== 'cancelled')
    return { next: 'unknown', reason: `the upstream's task has a status Idem does not know: "${status}"` };
  if (generation === 'v1') return { next: 'result', status };
  if (isRecord(task.result)) return { next: 'end', end: { result: withoutRelatedTask(task.result) } };
  if (status === 'failed' && isJsonRpcError(task.error)) return { next: 'end', end: { error: task.error } };
  return {
    next: 'unknown',
    reason:
      status === 'cancelled'
        ? 'the upstream cancelled its task without a result; whether it acted first is unknown'
        : `the upstream's task ended "${status}" without a result or an error`,
  };
}

/**
 * What a v1 `tasks/result` answer says of a terminal task: the CallToolResult (without the
 * `related-task` mark it MUST carry, which names the upstream's task, not Idem's), or the
 * request's JSON-RPC error. A `cancelled` task without a result, and a task the upstream no longer
 * knows, end unknown.
 */
export function taskResultEnd(
  reply: UpstreamReply,
  status: 'completed' | 'failed' | 'cancelled',
): TaskEnd | { unknown: string } {
  if ('result' in reply) return { result: withoutRelatedTask(reply.result as Record<string, unknown>) };
  if (reply.error.code === TASK_NOT_FOUND) return { unknown: FORGOTTEN };
  if (status === 'cancelled')
    return { unknown: 'the upstream cancelled its task; whether it acted first is unknown' };
  return { error: reply.error };
}

/**
 * How the upstream's task ended, as the dispatch's result. A JSON-RPC error after the task was
 * made is no refusal: the upstream took the call, so whether it acted is unknown.
 */
export function taskEndResult(end: TaskEnd): ToolResult {
  if ('result' in end) return end.result as ToolResult;
  throw new OutcomeUnknownError(
    `the upstream's task ended with JSON-RPC error ${end.error.code}: ${end.error.message}; whether it acted first is unknown`,
    end.error,
  );
}

/**
 * A 2026-07-28 request's own `_meta` declaring the tasks extension, beside the client
 * capabilities it would have declared anyway: how an upstream's task is asked for and followed.
 */
export function declaringTasks(capabilities: Record<string, unknown>): Record<string, unknown> {
  const extensions = (capabilities.extensions ?? {}) as Record<string, unknown>;
  return {
    [ENVELOPE.clientCapabilities]: { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } },
  };
}

/** The tool's result as the upstream's task gave it, without the mark naming that task. */
export function withoutRelatedTask(result: Record<string, unknown>): Record<string, unknown> {
  const meta = result._meta;
  if (!isRecord(meta) || !(RELATED_TASK_META_KEY in meta)) return result;
  const { [RELATED_TASK_META_KEY]: _, ...rest } = meta;
  const { _meta: __, ...others } = result;
  return Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others;
}

export interface FollowOptions {
  /** The caller cancelled: the upstream is asked to cancel its task, and following goes on to its end. */
  signal?: AbortSignal;
  /** Past this time (ms), a task still waiting for input is given up on (its outcome unknown). */
  inputDeadlineAt?: number;
  /** Added to every request's `_meta` (a v2 upstream: the request's own declaration of the extension). */
  meta?: Record<string, unknown>;
}

/** What the follower needs of the connection to the upstream that created the task. */
export type TaskLink = Pick<UpstreamConnection, 'name' | 'request'>;

/**
 * Follows an upstream's task to its end: `tasks/get` at the task's poll interval until it is
 * terminal, then (v1) `tasks/result`. Resolves with how it ended; throws OutcomeUnknownError when
 * nothing can say: the upstream no longer knows the task, the connection was lost (a stdio
 * upstream's tasks die with its process), it was cancelled without a result, or it still waited
 * for input at `inputDeadlineAt`. Never "failed" for any of these: the task may have acted.
 */
export async function followUpstreamTask(
  link: TaskLink,
  task: CreatedTask,
  { signal, inputDeadlineAt, meta }: FollowOptions = {},
): Promise<TaskEnd> {
  const { generation, taskId } = task;
  const params = { taskId, ...(meta ? { _meta: meta } : {}) };
  // A 2026-07-28 HTTP upstream checks the task id against `Mcp-Name` (standard headers).
  const headers = generation === 'v2' ? { 'mcp-name': taskId } : undefined;
  const ask = (method: string) => requestOrLost(link, method, params, headers);
  let pollMs = clampPoll(task.pollIntervalMs ?? DEFAULT_POLL_MS);
  let cancelAsked = false;
  const cancelOnce = () => {
    if (cancelAsked) return;
    cancelAsked = true;
    // The caller's cancel, passed on as a task is cancelled (never notifications/cancelled).
    void ask('tasks/cancel').catch(() => {});
  };
  signal?.addEventListener('abort', cancelOnce, { once: true });
  try {
    if (signal?.aborted) cancelOnce();
    for (;;) {
      const reply = await ask('tasks/get');
      if ('error' in reply) throw new OutcomeUnknownError(lookupFailed(reply.error, link.name));
      const step = taskStepOf(generation, reply.result, pollMs);
      switch (step.next) {
        case 'poll':
          if (
            step.status === 'input_required' &&
            inputDeadlineAt !== undefined &&
            Date.now() >= inputDeadlineAt
          )
            throw new OutcomeUnknownError(
              "the upstream's task waits for input, which Idem does not relay to it yet; whether it acted is unknown",
            );
          pollMs = clampPoll(step.afterMs);
          await pause(pollMs, signal);
          continue;
        case 'result': {
          const end = taskResultEnd(await ask('tasks/result'), step.status);
          if ('unknown' in end) throw new OutcomeUnknownError(end.unknown);
          return end;
        }
        case 'end':
          return step.end;
        case 'unknown':
          throw new OutcomeUnknownError(step.reason);
      }
    }
  } finally {
    signal?.removeEventListener('abort', cancelOnce);
  }
}

async function requestOrLost(
  link: TaskLink,
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string> | undefined,
): Promise<UpstreamReply> {
  try {
    return await link.request(method, params, headers ? { headers } : {});
  } catch (error) {
    if (error instanceof UpstreamClosedError || error instanceof UpstreamUnavailableError)
      throw new OutcomeUnknownError(
        `the connection to upstream ${link.name} was lost while its task ran (${error.message}); whether it acted is unknown`,
      );
    throw error;
  }
}

function lookupFailed(error: { code: number; message: string }, upstream: string): string {
  if (error.code === TASK_NOT_FOUND) return FORGOTTEN;
  return `upstream ${upstream} answered tasks/get for its task with JSON-RPC error ${error.code}: ${error.message}; whether it acted is unknown`;
}

/**
 * Said of an upstream task that cannot be read to its end. These texts reach the caller (its
 * unknown answer's detail): the upstream's task id is not in them — it is Idem's to follow, and
 * the journal's `upstream_task` entry names it for an operator.
 */
const FORGOTTEN =
  'the upstream no longer knows its task (it restarted, or dropped the task); whether it acted is unknown';

function pollIntervalOf(
  task: Record<string, unknown>,
  generation: UpstreamTaskGeneration,
): number | undefined {
  return positive(generation === 'v1' ? task.pollInterval : task.pollIntervalMs);
}

function clampPoll(ms: number): number {
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, ms));
}

/** Waits `ms`, or less when the caller cancels (so that the upstream hears of it at once). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (signal && !signal.aborted) signal.addEventListener('abort', done, { once: true });
  });
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isJsonRpcError(value: unknown): value is { code: number; message: string; data?: unknown } {
  return isRecord(value) && typeof value.code === 'number' && typeof value.message === 'string';
}
