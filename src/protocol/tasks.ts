import { envelopeOf, hasEnvelope, MISSING_REQUIRED_CLIENT_CAPABILITY } from './revisions.js';

/**
 * MCP tasks on the wire, in both generations. `v1` is the 2025-11-25
 * revision's experimental tasks: the client asks for a task (`params.task`),
 * the answer is nested (`{task}`, `ttl`, `pollInterval`) and the result is
 * fetched by `tasks/result`. `v2` is the 2026-07-28 tasks extension
 * (SEP-2663): the server decides, the client only declares the extension on
 * each request, the answer is flat (`ttlMs`, `pollIntervalMs`) and
 * `tasks/get` inlines the result. The two also disagree on a tool's own
 * error: v1 calls it `failed`, v2 `completed` with `result.isError`.
 *
 * Only shapes live here: what a task is comes in as a {@link TaskView},
 * built by the engine from the store, and leaves as either generation's wire.
 */

/** The extension's id: in client capabilities per request, in `server/discover`, in `requiredCapabilities`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The `_meta` key that ties a v1 message (the `tasks/result` answer) to its task; never on a v2 inlined result. */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** v1 = 2025-11-25 experimental tasks, v2 = the 2026-07-28 extension (SEP-2663). */
export type TaskGeneration = 'v1' | 'v2';

/** A JSON-RPC error, as a task carries it. */
export interface TaskError {
  code: number;
  message: string;
  data?: unknown;
}

/** What a task is, whatever the wire: the engine builds it, this file renders it. Times are ms (store clock). */
export interface TaskView {
  taskId: string;
  /** In v2's sense: a tool's own error (`result.isError`) is `completed`. */
  status: TaskStatus;
  statusMessage?: string;
  createdAt: number;
  lastUpdatedAt: number;
  ttlMs: number | null;
  pollIntervalMs: number;
  /** completed (v2; also the v1 tasks/result of completed/failed-with-isError): the tool's result */
  result?: Record<string, unknown>;
  /** failed with a JSON-RPC error */
  error?: TaskError;
  inputRequests?: Record<string, { method: string; params: unknown }>;
}

/** The v1 server capability the gateway advertises in `initialize` (tasks/list, tasks/cancel, task-augmented tools/call). */
export const TASKS_CAPABILITY_V1 = { list: {}, cancel: {}, requests: { tools: { call: {} } } } as const;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Whether a 2026-07-28 request declares the extension in its own client
 * capabilities. Read per request, never from a session: a server must not
 * answer with a task a request that did not declare it. The value is an
 * object of settings (`{}` today); a later revision's settings still declare it.
 */
export function tasksDeclaredV2(params: unknown): boolean {
  const extensions = envelopeOf(params).clientCapabilities?.extensions;
  return isObject(extensions) && isObject(extensions[TASKS_EXTENSION]);
}

/**
 * The task a 2025-11-25 `tools/call` asks for (`params.task`), with the
 * lifetime it asks for when it names a usable one; undefined when it asks
 * for none. A request with a 2026-07-28 envelope never asks: in that revision
 * a legacy `task` param must not make a call a task.
 */
export function taskParamV1(params: unknown): { ttlMs?: number } | undefined {
  if (!isObject(params) || hasEnvelope(params) || !isObject(params.task)) return undefined;
  const { ttl } = params.task;
  return typeof ttl === 'number' && Number.isSafeInteger(ttl) && ttl > 0 ? { ttlMs: ttl } : {};
}

/** The fields every v2 task shape shares. */
function taskFieldsV2(view: TaskView): Record<string, unknown> {
  return {
    taskId: view.taskId,
    status: view.status,
    ...(view.statusMessage === undefined ? {} : { statusMessage: view.statusMessage }),
    createdAt: isoOf(view.createdAt),
    lastUpdatedAt: isoOf(view.lastUpdatedAt),
    ttlMs: view.ttlMs,
    pollIntervalMs: view.pollIntervalMs,
  };
}

/** The answer to a `tools/call` that became a task (v2): flat, and never the result, error or input itself. */
export function createTaskResultV2(view: TaskView): Record<string, unknown> {
  return { resultType: 'task', ...taskFieldsV2(view) };
}

/** The answer to `tasks/get` (v2): the task with what its status carries inlined. */
export function getTaskResultV2(view: TaskView): Record<string, unknown> {
  const task = { resultType: 'complete', ...taskFieldsV2(view) };
  switch (view.status) {
    case 'input_required':
      return { ...task, inputRequests: view.inputRequests ?? {} };
    case 'completed':
      // The inlined result is a 2026-07-28 CallToolResult: it says its resultType, as every result does.
      return {
        ...task,
        result: { resultType: 'complete', ...withoutRelatedTask(view.result ?? emptyResult()) },
      };
    case 'failed':
      return { ...task, error: view.error ?? failedWithoutError(view) };
    default:
      return task;
  }
}

/** The v1 `Task` (tasks/get, tasks/cancel, tasks/list items): a tool's own error is `failed` there. */
export function taskV1(view: TaskView): Record<string, unknown> {
  return {
    taskId: view.taskId,
    status: statusV1(view),
    ...(view.statusMessage === undefined ? {} : { statusMessage: view.statusMessage }),
    createdAt: isoOf(view.createdAt),
    lastUpdatedAt: isoOf(view.lastUpdatedAt),
    ttl: view.ttlMs,
    pollInterval: view.pollIntervalMs,
  };
}

/** The answer to a task-augmented `tools/call` (v1): the task, nested. */
export function createTaskResultV1(view: TaskView): Record<string, unknown> {
  return { task: taskV1(view) };
}

/**
 * What v1 `tasks/result` answers for a terminal task: exactly what the
 * `tools/call` would have answered (its result, tied to the task by
 * `_meta`, or its JSON-RPC error). A cancelled task whose outcome is not
 * known answers an error that says so. Undefined while the task is not
 * terminal: `tasks/result` waits.
 */
export function taskResultV1(
  view: TaskView,
): { result: Record<string, unknown> } | { error: TaskError } | undefined {
  switch (view.status) {
    case 'working':
    case 'input_required':
      return undefined;
    case 'completed':
      return { result: withRelatedTask(view.result ?? emptyResult(), view.taskId) };
    case 'failed':
      if (view.error) return { error: view.error };
      return view.result
        ? { result: withRelatedTask(view.result, view.taskId) }
        : { error: failedWithoutError(view) };
    case 'cancelled':
      // An outcome that arrived anyway is what the request would have answered.
      if (view.error) return { error: view.error };
      if (view.result) return { result: withRelatedTask(view.result, view.taskId) };
      return {
        error: {
          code: INTERNAL_ERROR,
          message: `Task ${view.taskId} was cancelled${view.statusMessage ? `: ${view.statusMessage}` : ''}`,
        },
      };
  }
}

/** -32021 for a request that can only be served as a task but does not declare the extension (HTTP 400). */
export function missingTasksCapability(): {
  code: typeof MISSING_REQUIRED_CLIENT_CAPABILITY;
  message: string;
  data: unknown;
} {
  return {
    code: MISSING_REQUIRED_CLIENT_CAPABILITY,
    message: `This request runs as a task: it must declare the ${TASKS_EXTENSION} extension in its client capabilities`,
    data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  };
}

/** -32602 for a task id that names no task of the caller's: unknown, another actor's and trimmed read the same. */
export function taskNotFound(taskId: string): { code: -32602; message: string } {
  return { code: -32602, message: `Task not found: ${taskId}` };
}

const INTERNAL_ERROR = -32603;

/** A completed task's result when the engine gave none: a valid result that claims nothing. */
function emptyResult(): Record<string, unknown> {
  return { content: [] };
}

function failedWithoutError(view: TaskView): TaskError {
  return { code: INTERNAL_ERROR, message: view.statusMessage ?? `Task ${view.taskId} failed` };
}

function statusV1(view: TaskView): TaskStatus {
  return view.status === 'completed' && view.result?.isError === true ? 'failed' : view.status;
}

function isoOf(ms: number): string {
  return new Date(ms).toISOString();
}

/** A v2 inlined result carries no related-task key: a v1 upstream's `tasks/result` puts one there. */
function withoutRelatedTask(result: Record<string, unknown>): Record<string, unknown> {
  if (!isObject(result._meta) || !(RELATED_TASK_META in result._meta)) return result;
  const { [RELATED_TASK_META]: _related, ...meta } = result._meta;
  const { _meta: _dropped, ...rest } = result;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

/** v1 `tasks/result` must say which task its answer belongs to. */
function withRelatedTask(result: Record<string, unknown>, taskId: string): Record<string, unknown> {
  const meta = isObject(result._meta) ? result._meta : {};
  return { ...result, _meta: { ...meta, [RELATED_TASK_META]: { taskId } } };
}
