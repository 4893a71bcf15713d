import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, UpstreamClosedError } from '../../errors.js';
import type { UpstreamReply } from './upstream-spec.js';
import {
  type CreatedTask,
  createdTaskOf,
  followUpstreamTask,
  type TaskLink,
  taskResultEnd,
  taskStepOf,
  withoutRelatedTask,
} from './upstream-task.js';

const RELATED = 'io.modelcontextprotocol/related-task';
const report = { content: [{ type: 'text', text: 'done' }] };

describe('createdTaskOf (is this answer a task?)', () => {
  it('reads a 2025-11-25 nested CreateTaskResult', () => {
    expect(
      createdTaskOf({
        task: {
          taskId: 't1',
          status: 'working',
          ttl: 60_000,
          pollInterval: 500,
          createdAt: '2026-01-02T03:04:05.000Z',
        },
      }),
    ).toEqual({
      generation: 'v1',
      taskId: 't1',
      status: 'working',
      pollIntervalMs: 500,
      createdAt: Date.parse('2026-01-02T03:04:05.000Z'),
    });
  });

  it('reads a 2026-07-28 flat one (resultType "task", pollIntervalMs)', () => {
    expect(
      createdTaskOf({
        resultType: 'task',
        taskId: 't2',
        status: 'working',
        ttlMs: null,
        pollIntervalMs: 250,
      }),
    ).toMatchObject({ generation: 'v2', taskId: 't2', pollIntervalMs: 250, createdAt: undefined });
  });

  it('is undefined for a tool result, also one whose structured content has a `task` field', () => {
    expect(createdTaskOf(report)).toBeUndefined();
    expect(createdTaskOf({ ...report, task: { taskId: 'mine' } })).toBeUndefined();
    expect(createdTaskOf({ resultType: 'complete', ...report })).toBeUndefined();
    expect(createdTaskOf(undefined)).toBeUndefined();
  });

  it('a task without a task id cannot be followed: unknown, not a result', () => {
    expect(() => createdTaskOf({ resultType: 'task', status: 'working' })).toThrow(OutcomeUnknownError);
    expect(() => createdTaskOf({ task: { status: 'working' } })).toThrow(OutcomeUnknownError);
  });
});

describe('taskStepOf (what a tasks/get answer means)', () => {
  it('working and input_required are polled again, at the interval the task names, else the last one', () => {
    expect(taskStepOf('v1', { taskId: 't', status: 'working', pollInterval: 300 }, 1000)).toEqual({
      next: 'poll',
      status: 'working',
      afterMs: 300,
    });
    expect(taskStepOf('v2', { taskId: 't', status: 'working', pollIntervalMs: 200 }, 1000)).toMatchObject({
      afterMs: 200,
    });
    // v2 names it pollIntervalMs: a v1 name on a v2 task is not read.
    expect(taskStepOf('v2', { taskId: 't', status: 'working', pollInterval: 5 }, 700)).toMatchObject({
      afterMs: 700,
    });
    // Answering an upstream task's input is a later step: until then it is waited on like work.
    expect(taskStepOf('v1', { taskId: 't', status: 'input_required' }, 400)).toEqual({
      next: 'poll',
      status: 'input_required',
      afterMs: 400,
    });
  });

  it('v1: every terminal status is read from tasks/result', () => {
    for (const status of ['completed', 'failed', 'cancelled'] as const)
      expect(taskStepOf('v1', { taskId: 't', status }, 1000)).toEqual({ next: 'result', status });
  });

  it('v2: completed (an isError result too) ends with its inlined result, without the related-task mark', () => {
    expect(
      taskStepOf(
        'v2',
        { taskId: 't', status: 'completed', result: { ...report, _meta: { [RELATED]: { taskId: 't' } } } },
        1000,
      ),
    ).toEqual({ next: 'end', end: { result: report } });
    const failedTool = { isError: true, content: [{ type: 'text', text: 'no' }] };
    expect(taskStepOf('v2', { taskId: 't', status: 'completed', result: failedTool }, 1000)).toEqual({
      next: 'end',
      end: { result: failedTool },
    });
  });

  it('v2: failed ends with its JSON-RPC error', () => {
    const error = { code: -32603, message: 'boom' };
    expect(taskStepOf('v2', { taskId: 't', status: 'failed', error }, 1000)).toEqual({
      next: 'end',
      end: { error },
    });
  });

  it('v2: cancelled is unknown unless it carries a result; a terminal task with neither is unknown', () => {
    expect(taskStepOf('v2', { taskId: 't', status: 'cancelled' }, 1000)).toMatchObject({
      next: 'unknown',
      reason: expect.stringContaining('cancelled its task'),
    });
    expect(taskStepOf('v2', { taskId: 't', status: 'cancelled', result: report }, 1000)).toEqual({
      next: 'end',
      end: { result: report },
    });
    expect(taskStepOf('v2', { taskId: 't', status: 'completed' }, 1000)).toMatchObject({ next: 'unknown' });
    expect(taskStepOf('v2', { taskId: 't', status: 'failed' }, 1000)).toMatchObject({ next: 'unknown' });
  });

  it('an answer that is no task, or a status nobody defined, is unknown (never failed)', () => {
    expect(taskStepOf('v1', {}, 1000)).toMatchObject({ next: 'unknown' });
    expect(taskStepOf('v1', { taskId: 't', status: 'paused' }, 1000)).toMatchObject({
      next: 'unknown',
      reason: expect.stringContaining('"paused"'),
    });
  });
});

describe('taskResultEnd (a v1 tasks/result answer)', () => {
  const result = (value: Record<string, unknown>): UpstreamReply => ({
    jsonrpc: '2.0',
    id: 1,
    result: value,
  });
  const error = (code: number, message: string): UpstreamReply => ({
    jsonrpc: '2.0',
    id: 1,
    error: { code, message },
  });

  it('the tool result, without the related-task mark the upstream MUST put on it (other _meta stays)', () => {
    expect(
      taskResultEnd(result({ ...report, _meta: { [RELATED]: { taskId: 't' }, other: 1 } }), 'completed'),
    ).toEqual({ result: { ...report, _meta: { other: 1 } } });
    expect(taskResultEnd(result({ isError: true, content: [] }), 'failed')).toEqual({
      result: { isError: true, content: [] },
    });
  });

  it("the request's JSON-RPC error; a task not found, or cancelled without a result, is unknown", () => {
    expect(taskResultEnd(error(-32603, 'boom'), 'failed')).toEqual({
      error: { code: -32603, message: 'boom' },
    });
    expect(taskResultEnd(error(-32602, 'Task not found'), 'completed')).toEqual({
      unknown: expect.stringContaining('the upstream no longer knows its task ('),
    });
    expect(taskResultEnd(error(-32603, 'no result stored'), 'cancelled')).toEqual({
      unknown: expect.stringContaining('cancelled its task;'),
    });
    expect(taskResultEnd(result(report), 'cancelled')).toEqual({ result: report });
  });

  it('withoutRelatedTask leaves a result without the mark as it is', () => {
    expect(withoutRelatedTask(report)).toBe(report);
    expect(withoutRelatedTask({ ...report, _meta: { [RELATED]: { taskId: 't' } } })).toEqual(report);
  });
});

/** The far side of the connection: answers each request from a script, and keeps what it was sent. */
function scriptedUpstream(
  answer: (method: string, params: Record<string, unknown>) => UpstreamReply | Error,
) {
  const sent: { method: string; params: Record<string, unknown>; headers?: Record<string, string> }[] = [];
  const link: TaskLink = {
    name: 'up',
    request: async (method, params, { headers } = {}) => {
      const p = (params ?? {}) as Record<string, unknown>;
      sent.push({ method, params: p, ...(headers ? { headers } : {}) });
      const reply = answer(method, p);
      if (reply instanceof Error) throw reply;
      return reply;
    },
  };
  return { link, sent };
}
const ok = (result: Record<string, unknown>): UpstreamReply => ({ jsonrpc: '2.0', id: 1, result });
const v1Task: CreatedTask = {
  generation: 'v1',
  taskId: 't',
  status: 'working',
  pollIntervalMs: 1,
  createdAt: undefined,
};

describe('followUpstreamTask', () => {
  it('v1: polls tasks/get until terminal, then takes tasks/result', async () => {
    let looks = 0;
    const { link, sent } = scriptedUpstream((method) =>
      method === 'tasks/get'
        ? ok({ taskId: 't', status: ++looks < 3 ? 'working' : 'completed', pollInterval: 1 })
        : ok({ ...report, _meta: { [RELATED]: { taskId: 't' } } }),
    );
    expect(await followUpstreamTask(link, v1Task)).toEqual({ result: report });
    expect(sent.map((s) => s.method)).toEqual(['tasks/get', 'tasks/get', 'tasks/get', 'tasks/result']);
    expect(sent[0]?.params).toEqual({ taskId: 't' });
  });

  it('v2: the task id in Mcp-Name and the declared extension on each look; the inlined result ends it', async () => {
    const meta = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { x: {} } } };
    const { link, sent } = scriptedUpstream(() => ok({ taskId: 't2', status: 'completed', result: report }));
    const task: CreatedTask = { ...v1Task, generation: 'v2', taskId: 't2' };
    expect(await followUpstreamTask(link, task, { meta })).toEqual({ result: report });
    expect(sent).toEqual([
      { method: 'tasks/get', params: { taskId: 't2', _meta: meta }, headers: { 'mcp-name': 't2' } },
    ]);
  });

  it('a task the upstream no longer knows (-32602) is unknown, said so', async () => {
    const { link } = scriptedUpstream(() => ({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: 'Failed to retrieve task: Task not found' },
    }));
    await expect(followUpstreamTask(link, v1Task)).rejects.toThrow(
      new OutcomeUnknownError(
        'the upstream no longer knows its task (it restarted, or dropped the task); whether it acted is unknown',
      ),
    );
  });

  it('a connection lost while following is unknown', async () => {
    const { link } = scriptedUpstream(() => new UpstreamClosedError('upstream up went away'));
    await expect(followUpstreamTask(link, v1Task)).rejects.toThrow(
      /connection to upstream up was lost.*unknown/,
    );
  });

  it("the caller's cancel becomes tasks/cancel, once; following goes on, and a cancelled task is unknown", async () => {
    const cancelling = new AbortController();
    let cancelled = false;
    const { link, sent } = scriptedUpstream((method) => {
      if (method === 'tasks/cancel') {
        cancelled = true;
        return ok({ taskId: 't', status: 'cancelled' });
      }
      if (method === 'tasks/result')
        return { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'none' } };
      if (!cancelled) cancelling.abort();
      return ok({ taskId: 't', status: cancelled ? 'cancelled' : 'working', pollInterval: 1 });
    });
    await expect(followUpstreamTask(link, v1Task, { signal: cancelling.signal })).rejects.toThrow(
      /cancelled its task; whether it acted first is unknown/,
    );
    expect(sent.filter((s) => s.method === 'tasks/cancel')).toHaveLength(1);
  });

  it('a task still waiting for input at the deadline is given up on, unknown', async () => {
    const { link } = scriptedUpstream(() => ok({ taskId: 't', status: 'input_required', pollInterval: 1 }));
    await expect(followUpstreamTask(link, v1Task, { inputDeadlineAt: Date.now() })).rejects.toThrow(
      /waits for input, which Idem does not relay to it yet/,
    );
  });
});
