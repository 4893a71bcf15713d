import {
  CallToolResultV1Schema,
  CancelTaskResultV1Schema,
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  ListTasksResultV1Schema,
  ServerCapabilitiesV1Schema,
  TaskV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  hasTaskClientCapabilityV2,
  withTaskCapabilityV2,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
  RELATED_TASK_META_KEY,
  ServerTasksCapabilitySchema,
  TaskSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ENVELOPE } from './revisions.js';
import {
  createTaskResultV1,
  createTaskResultV2,
  getTaskResultV2,
  missingTasksCapability,
  RELATED_TASK_META,
  TASKS_CAPABILITY_V1,
  TASKS_EXTENSION,
  type TaskView,
  taskNotFound,
  taskParamV1,
  taskResultV1,
  tasksDeclaredV2,
  taskV1,
} from './tasks.js';

const CREATED = Date.UTC(2026, 6, 28, 10, 30, 0, 125);
const UPDATED = CREATED + 4_000;
const RETENTION = 48 * 3600_000;

const base = (status: TaskView['status'], more: Partial<TaskView> = {}): TaskView => ({
  taskId: 'tsk_0123456789abcdef',
  status,
  createdAt: CREATED,
  lastUpdatedAt: UPDATED,
  ttlMs: RETENTION,
  pollIntervalMs: 1000,
  ...more,
});

const RESULT = { content: [{ type: 'text', text: 'Deleted report.txt' }] };
const TOOL_ERROR = { content: [{ type: 'text', text: 'the job failed' }], isError: true };
const ELICIT = {
  method: 'elicitation/create',
  params: {
    message: 'Delete report.txt?',
    requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
  },
};

/** Every status, and the cases within a status that render differently. */
const VIEWS: [string, TaskView][] = [
  ['working', base('working')],
  ['working, with a message and no lifetime limit', base('working', { statusMessage: 'sent', ttlMs: null })],
  ['input_required', base('input_required', { inputRequests: { confirm: ELICIT } })],
  ['completed', base('completed', { result: RESULT })],
  ['completed with a tool error', base('completed', { result: TOOL_ERROR })],
  [
    'completed, a v1 upstream having tied the result to its own task',
    base('completed', {
      result: { ...RESULT, _meta: { [RELATED_TASK_META]: { taskId: 'upstream-7' }, 'io.idem/x': 1 } },
    }),
  ],
  ['failed with a JSON-RPC error', base('failed', { error: { code: -32603, message: 'upstream broke' } })],
  ['cancelled', base('cancelled', { statusMessage: 'cancelled at your request' })],
  // What the engine should never give: the wire stays valid and claims nothing.
  ['completed, no result given', base('completed')],
  ['failed, no error given', base('failed', { statusMessage: 'the upstream went away' })],
];

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('v2 (2026-07-28 extension) shapes, decoded by ext-tasks core/v2', () => {
  it.each(VIEWS)('CreateTaskResult, %s: flat, and nothing the schema does not declare', (_what, view) => {
    const wire = createTaskResultV2(view);
    // The schemas are closed objects that drop undeclared keys: equality means there were none
    // (no `task` wrapper, no ttl/pollInterval, no result, error, inputRequests or requestState).
    expect(CreateTaskResultV2Schema.parse(wire)).toEqual(wire);
    expect(wire).toMatchObject({ resultType: 'task', taskId: view.taskId, status: view.status });
    expect(wire.createdAt).toMatch(ISO);
    expect(wire.lastUpdatedAt).toMatch(ISO);
  });

  it.each(VIEWS)('GetTaskResult, %s: what the status carries, and nothing else', (_what, view) => {
    const wire = getTaskResultV2(view);
    expect(GetTaskResultV2Schema.parse(wire)).toEqual(wire);
    expect(wire.resultType).toBe('complete');
    // A tool's own error stays `completed` in this generation.
    expect(wire.status).toBe(view.status);
    const meta = (wire.result as { _meta?: Record<string, unknown> } | undefined)?._meta;
    expect(meta?.[RELATED_TASK_META]).toBeUndefined();
    // An inlined result is a 2026-07-28 CallToolResult (what ext-tasks' client decodes it as).
    if (wire.result) expect((wire.result as { resultType?: unknown }).resultType).toBe('complete');
  });

  it('an inlined result loses only the related-task key of its _meta', () => {
    const [, tied] = VIEWS[5] as [string, TaskView];
    expect(getTaskResultV2(tied).result).toEqual({
      resultType: 'complete',
      ...RESULT,
      _meta: { 'io.idem/x': 1 },
    });
    const onlyTied = base('completed', {
      result: { ...RESULT, _meta: { [RELATED_TASK_META]: { taskId: 'u' } } },
    });
    expect(getTaskResultV2(onlyTied).result).toEqual({ resultType: 'complete', ...RESULT });
  });

  it('known answers', () => {
    expect(createTaskResultV2(base('working'))).toEqual({
      resultType: 'task',
      taskId: 'tsk_0123456789abcdef',
      status: 'working',
      createdAt: '2026-07-28T10:30:00.125Z',
      lastUpdatedAt: '2026-07-28T10:30:04.125Z',
      ttlMs: 172_800_000,
      pollIntervalMs: 1000,
    });
    expect(getTaskResultV2(base('completed', { result: TOOL_ERROR, statusMessage: 'done' }))).toEqual({
      resultType: 'complete',
      taskId: 'tsk_0123456789abcdef',
      status: 'completed',
      statusMessage: 'done',
      createdAt: '2026-07-28T10:30:00.125Z',
      lastUpdatedAt: '2026-07-28T10:30:04.125Z',
      ttlMs: 172_800_000,
      pollIntervalMs: 1000,
      result: { resultType: 'complete', ...TOOL_ERROR },
    });
    expect(getTaskResultV2(base('input_required', { inputRequests: { confirm: ELICIT } }))).toEqual({
      resultType: 'complete',
      taskId: 'tsk_0123456789abcdef',
      status: 'input_required',
      createdAt: '2026-07-28T10:30:00.125Z',
      lastUpdatedAt: '2026-07-28T10:30:04.125Z',
      ttlMs: 172_800_000,
      pollIntervalMs: 1000,
      inputRequests: { confirm: ELICIT },
    });
    expect(getTaskResultV2(base('failed', { error: { code: -32603, message: 'upstream broke' } }))).toEqual({
      resultType: 'complete',
      taskId: 'tsk_0123456789abcdef',
      status: 'failed',
      createdAt: '2026-07-28T10:30:00.125Z',
      lastUpdatedAt: '2026-07-28T10:30:04.125Z',
      ttlMs: 172_800_000,
      pollIntervalMs: 1000,
      error: { code: -32603, message: 'upstream broke' },
    });
  });
});

describe('v1 (2025-11-25) shapes, decoded by ext-tasks core/v1 and by the SDK 1.x schemas', () => {
  it.each(VIEWS)('Task, %s', (_what, view) => {
    const wire = taskV1(view);
    expect(TaskV1Schema.parse(wire)).toEqual(wire);
    expect(GetTaskResultV1Schema.parse(wire)).toEqual(wire);
    expect(CancelTaskResultV1Schema.parse(wire)).toEqual(wire);
    expect(TaskSchema.parse(wire)).toEqual(wire);
    expect(GetTaskResultSchema.parse(wire)).toEqual(wire);
    expect(CancelTaskResultSchema.parse(wire)).toEqual(wire);
    expect(wire.createdAt).toMatch(ISO);
    // A tool's own error is `failed` in this generation.
    expect(wire.status).toBe(view.result?.isError === true ? 'failed' : view.status);
  });

  it.each(VIEWS)('CreateTaskResult, %s: the task, nested', (_what, view) => {
    const wire = createTaskResultV1(view);
    expect(CreateTaskResultV1Schema.parse(wire)).toEqual(wire);
    expect(CreateTaskResultSchema.parse(wire)).toEqual(wire);
  });

  it('tasks/list', () => {
    const wire = { tasks: VIEWS.map(([, view]) => taskV1(view)) };
    expect(ListTasksResultV1Schema.parse(wire)).toEqual(wire);
    expect(ListTasksResultSchema.parse(wire)).toEqual(wire);
  });

  it.each(VIEWS)('tasks/result, %s: what the call would have answered', (_what, view) => {
    const answer = taskResultV1(view);
    if (view.status === 'working' || view.status === 'input_required') {
      expect(answer, 'not terminal: tasks/result waits').toBeUndefined();
      return;
    }
    if (answer && 'result' in answer) {
      expect(CallToolResultV1Schema.parse(answer.result)).toEqual(answer.result);
      expect(CallToolResultSchema.parse(answer.result)).toEqual(answer.result);
      expect(answer.result._meta).toMatchObject({ [RELATED_TASK_META_KEY]: { taskId: view.taskId } });
    } else {
      expect(answer?.error).toEqual({ code: expect.any(Number), message: expect.any(String) });
    }
  });

  it('tasks/result: the JSON-RPC error as it came, a tool error as its result, a cancel without outcome as an error', () => {
    expect(taskResultV1(base('failed', { error: { code: -32000, message: 'no', data: { x: 1 } } }))).toEqual({
      error: { code: -32000, message: 'no', data: { x: 1 } },
    });
    expect(taskResultV1(base('completed', { result: TOOL_ERROR }))).toEqual({
      result: { ...TOOL_ERROR, _meta: { [RELATED_TASK_META]: { taskId: 'tsk_0123456789abcdef' } } },
    });
    expect(taskResultV1(base('cancelled'))).toEqual({
      error: { code: -32603, message: 'Task tsk_0123456789abcdef was cancelled' },
    });
    // An outcome that arrived after the cancel is still what the request answered.
    expect(taskResultV1(base('cancelled', { result: RESULT }))).toEqual({
      result: { ...RESULT, _meta: { [RELATED_TASK_META]: { taskId: 'tsk_0123456789abcdef' } } },
    });
  });

  it('known answers', () => {
    expect(createTaskResultV1(base('working'))).toEqual({
      task: {
        taskId: 'tsk_0123456789abcdef',
        status: 'working',
        createdAt: '2026-07-28T10:30:00.125Z',
        lastUpdatedAt: '2026-07-28T10:30:04.125Z',
        ttl: 172_800_000,
        pollInterval: 1000,
      },
    });
    expect(
      taskV1(base('completed', { result: TOOL_ERROR, statusMessage: 'the job failed', ttlMs: null })),
    ).toEqual({
      taskId: 'tsk_0123456789abcdef',
      status: 'failed',
      statusMessage: 'the job failed',
      createdAt: '2026-07-28T10:30:00.125Z',
      lastUpdatedAt: '2026-07-28T10:30:04.125Z',
      ttl: null,
      pollInterval: 1000,
    });
    expect(
      taskResultV1(
        base('completed', { result: { ...RESULT, _meta: { [RELATED_TASK_META]: { taskId: 'u' } } } }),
      ),
    ).toEqual({
      result: { ...RESULT, _meta: { [RELATED_TASK_META]: { taskId: 'tsk_0123456789abcdef' } } },
    });
  });

  it('the server capability the gateway advertises', () => {
    expect(ServerCapabilitiesV1Schema.parse({ tasks: TASKS_CAPABILITY_V1 })).toEqual({
      tasks: TASKS_CAPABILITY_V1,
    });
    expect(ServerTasksCapabilitySchema.parse(TASKS_CAPABILITY_V1)).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
  });
});

describe('what a request asks for', () => {
  const enveloped = (capabilities: unknown) => ({
    name: 'slow_compute',
    _meta: { [ENVELOPE.protocolVersion]: '2026-07-28', [ENVELOPE.clientCapabilities]: capabilities },
  });

  it.each([
    [
      'declared, as ext-tasks declares it',
      withTaskCapabilityV2({
        name: 'slow_compute',
        _meta: { [ENVELOPE.protocolVersion]: '2026-07-28', [ENVELOPE.clientCapabilities]: { sampling: {} } },
      }),
      true,
    ],
    [
      'declared among other extensions',
      enveloped({ extensions: { other: {}, [TASKS_EXTENSION]: {} } }),
      true,
    ],
    ['no _meta', { name: 'slow_compute' }, false],
    ['no extensions', enveloped({ elicitation: {} }), false],
    ['another extension only', enveloped({ extensions: { other: {} } }), false],
    ['null', enveloped({ extensions: { [TASKS_EXTENSION]: null } }), false],
    ['true', enveloped({ extensions: { [TASKS_EXTENSION]: true } }), false],
    ['extensions not an object', enveloped({ extensions: [TASKS_EXTENSION] }), false],
  ])('v2 declaration, %s: agrees with ext-tasks', (_what, params, declared) => {
    expect(tasksDeclaredV2(params)).toBe(declared);
    expect(hasTaskClientCapabilityV2(params)).toBe(declared);
  });

  it('v2 declaration with settings a later revision may add: still declared', () => {
    expect(tasksDeclaredV2(enveloped({ extensions: { [TASKS_EXTENSION]: { future: true } } }))).toBe(true);
  });

  it('declaring exactly what -32021 names as required satisfies the check', () => {
    const { data } = missingTasksCapability();
    const declaring = enveloped((data as { requiredCapabilities: unknown }).requiredCapabilities);
    expect(tasksDeclaredV2(declaring)).toBe(true);
    expect(hasTaskClientCapabilityV2(declaring)).toBe(true);
  });

  it.each([
    ['a lifetime', { name: 't', task: { ttl: 60_000 } }, { ttlMs: 60_000 }],
    ['no lifetime', { name: 't', task: {} }, {}],
    ['a lifetime that is no duration', { name: 't', task: { ttl: -5 } }, {}],
    ['a fractional lifetime', { name: 't', task: { ttl: 1.5 } }, {}],
    ['no task', { name: 't' }, undefined],
    ['a task that is not an object', { name: 't', task: true }, undefined],
    ['no params', undefined, undefined],
    // 2026-07-28: a legacy task param must not make a call a task.
    [
      'a 2026-07-28 request',
      { name: 't', task: { ttl: 60_000 }, _meta: { [ENVELOPE.protocolVersion]: '2026-07-28' } },
      undefined,
    ],
  ])('v1 task param, %s', (_what, params, asked) => {
    expect(taskParamV1(params)).toEqual(asked);
  });
});

describe('errors', () => {
  it('known answers', () => {
    expect(missingTasksCapability()).toEqual({
      code: -32021,
      message:
        'This request runs as a task: it must declare the io.modelcontextprotocol/tasks extension in its client capabilities',
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    expect(taskNotFound('tasks-conformance-nonexistent-12345')).toEqual({
      code: -32602,
      message: 'Task not found: tasks-conformance-nonexistent-12345',
    });
  });
});
