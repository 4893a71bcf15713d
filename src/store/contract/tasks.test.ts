import { beforeEach, expect, it } from 'vitest';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { taskCancelEvent, taskCreatedEvent } from '../../journal/task-events.js';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import {
  AWKWARD_OUTCOME,
  created,
  HANDLE,
  newId,
  newTaskId,
  stable,
  subject,
  taskInput,
} from './fixtures.contract.js';

describeEveryStore('tasks', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { executionIn, elapse, kinds } = t;

  it("openTask creates the pair's task at the store's time, once: a repeat gets it unchanged and journals nothing", async () => {
    const { record } = await executionIn('dispatched');
    const before = await store.now();
    const input = taskInput(record.id, { actor: record.actor });
    const task = await store.openTask(input, created(record, input));
    const after = await store.now();
    expect(task).toEqual({
      taskId: input.taskId,
      executionId: record.id,
      actor: record.actor,
      generation: 'v2',
      createdAt: task.createdAt,
      ttlMs: 48 * 3_600_000,
      pollIntervalMs: 1_000,
      cancelRequestedAt: null,
    });
    expect(task.createdAt).toBeGreaterThanOrEqual(before);
    expect(task.createdAt).toBeLessThanOrEqual(after);

    await elapse(5);
    const repeat = taskInput(record.id, {
      actor: record.actor,
      generation: 'v1',
      ttlMs: null,
      pollIntervalMs: 5,
    });
    expect(await store.openTask(repeat, created(record, repeat))).toEqual(task);
    expect(await store.findTask(record.id, record.actor)).toEqual(task);
    expect(await store.getTask(repeat.taskId)).toBeUndefined();
    const journaled = await kinds('task_created');
    expect(journaled).toHaveLength(1);
    expect(journaled[0]).toMatchObject({
      executionId: record.id,
      actor: record.actor,
      tool: record.tool,
      detail: { taskId: input.taskId, generation: 'v2', ttlMs: 48 * 3_600_000 },
    });
    expect(chainProblems(await store.readJournal())).toEqual([]);
  });

  it('of concurrent openTask calls for one pair, or requestTaskCancel calls for one task, one writes', async () => {
    const { record } = await executionIn('dispatched');
    const inputs = Array.from({ length: 12 }, () => taskInput(record.id));
    const tasks = await Promise.all(inputs.map((input) => store.openTask(input, created(record, input))));
    expect(new Set(tasks.map((t) => t.taskId)).size).toBe(1);
    expect(inputs.map((i) => i.taskId)).toContain(tasks[0]!.taskId);
    expect(await kinds('task_created')).toHaveLength(1);

    const cancel = [taskCancelEvent(subject(record, 'user:alice'), tasks[0]!.taskId, 'outcome')];
    const cancels = await Promise.all(inputs.map(() => store.requestTaskCancel(tasks[0]!.taskId, cancel)));
    expect(new Set(cancels.map((t) => t?.cancelRequestedAt)).size).toBe(1);
    expect(cancels[0]?.cancelRequestedAt).not.toBeNull();
    expect(await kinds('task_cancel')).toHaveLength(1);
    expect(chainProblems(await store.readJournal())).toEqual([]);
  });

  it('two actors on one execution (a business-key scope shares it) get two tasks', async () => {
    const { record } = await executionIn('dispatched');
    const alice = taskInput(record.id, { actor: 'user:alice' });
    const bob = taskInput(record.id, { actor: 'user:bob', generation: 'v1', ttlMs: null });
    const first = await store.openTask(alice, created(record, alice));
    const second = await store.openTask(bob, created(record, bob));
    expect(second.taskId).not.toBe(first.taskId);
    expect(second).toMatchObject({ actor: 'user:bob', generation: 'v1', ttlMs: null });
    expect(await store.findTask(record.id, 'user:alice')).toEqual(first);
    expect(await store.findTask(record.id, 'user:bob')).toEqual(second);
    expect(await store.findTask(record.id, 'user:carol')).toBeUndefined();
    expect(await kinds('task_created')).toHaveLength(2);
  });

  it('openTask on an execution that does not exist rejects, writing nothing', async () => {
    const input = taskInput(newId());
    const events = [
      taskCreatedEvent({ executionId: input.executionId, actor: 'user:alice', tool: 't' }, input),
    ];
    await expect(store.openTask(input, events)).rejects.toThrow(/no such execution/);
    expect(await store.getTask(input.taskId)).toBeUndefined();
    expect(await store.listTasks('user:alice', { limit: 10 })).toEqual([]);
    expect(await store.readJournal()).toEqual([]);
  });

  it('getTask returns the task with its execution as it is now; an unknown id is undefined', async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const input = taskInput(record.id);
    const task = await store.openTask(input);
    const got = await store.getTask(input.taskId);
    expect(got?.task).toEqual(task);
    expect(stable(got?.record)).toEqual(stable(await store.get(record.id)));
    expect(got!.record.readAt).toBeGreaterThanOrEqual(task.createdAt);

    await store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'completed',
      token: claim.claimToken,
      holder: null,
      outcome: AWKWARD_OUTCOME,
    });
    const after = await store.getTask(input.taskId);
    expect(after?.record).toMatchObject({ id: record.id, state: 'completed', outcome: AWKWARD_OUTCOME });
    expect(after?.task).toEqual(task);
    expect(await store.getTask(newTaskId())).toBeUndefined();
  });

  it("listTasks pages through one actor's tasks in taskId order, and no one else's", async () => {
    const executions = [];
    for (let i = 0; i < 5; i++) executions.push((await executionIn('dispatched')).record);
    const alice = [];
    for (const record of executions) alice.push(await store.openTask(taskInput(record.id)));
    const bob = [];
    for (const record of executions.slice(0, 2))
      bob.push(await store.openTask(taskInput(record.id, { actor: 'user:bob' })));
    const byId = (tasks: { taskId: string }[]) =>
      tasks.map((t) => t.taskId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const ids = byId(alice);

    const first = await store.listTasks('user:alice', { limit: 2 });
    expect(first.map((t) => t.taskId)).toEqual(ids.slice(0, 2));
    const second = await store.listTasks('user:alice', { after: first.at(-1)!.taskId, limit: 2 });
    expect(second.map((t) => t.taskId)).toEqual(ids.slice(2, 4));
    const third = await store.listTasks('user:alice', { after: second.at(-1)!.taskId, limit: 2 });
    expect(third.map((t) => t.taskId)).toEqual(ids.slice(4));
    expect(await store.listTasks('user:alice', { after: ids[4]!, limit: 2 })).toEqual([]);
    expect(third[0]).toEqual(alice.find((t) => t.taskId === ids[4]));

    expect((await store.listTasks('user:bob', { limit: 10 })).map((t) => t.taskId)).toEqual(byId(bob));
    expect(await store.listTasks('user:carol', { limit: 10 })).toEqual([]);
  });

  it('requestTaskCancel sets its time once: a second call moves nothing and journals nothing', async () => {
    const { record } = await executionIn('dispatched');
    const input = taskInput(record.id);
    const task = await store.openTask(input);
    const cancel = () => [taskCancelEvent(subject(record, input.actor), input.taskId, 'outcome')];
    await elapse(5);
    const before = await store.now();
    const first = await store.requestTaskCancel(input.taskId, cancel());
    const after = await store.now();
    expect(first).toEqual({ ...task, cancelRequestedAt: first!.cancelRequestedAt });
    expect(first!.cancelRequestedAt).toBeGreaterThanOrEqual(before);
    expect(first!.cancelRequestedAt).toBeLessThanOrEqual(after);

    await elapse(20);
    expect(await store.requestTaskCancel(input.taskId, cancel())).toEqual(first);
    expect((await store.getTask(input.taskId))?.task).toEqual(first);
    const journaled = await kinds('task_cancel');
    expect(journaled).toHaveLength(1);
    expect(journaled[0]).toMatchObject({
      executionId: record.id,
      detail: { taskId: input.taskId, before: 'outcome' },
    });

    expect(await store.requestTaskCancel(newTaskId(), cancel())).toBeUndefined();
    expect(await kinds('task_cancel')).toHaveLength(1);
  });

  it("the sweep trims an execution's tasks with it, and leaves a dispatched one's, however old", async () => {
    const finished = await executionIn('completed');
    const finishedTasks = [
      await store.openTask(taskInput(finished.record.id)),
      await store.openTask(taskInput(finished.record.id, { actor: 'user:bob' })),
    ];
    await store.requestTaskCancel(finishedTasks[0]!.taskId);
    const live = await executionIn('dispatched');
    const liveTask = await store.openTask(taskInput(live.record.id));
    await store.setUpstreamTask(live.record.id, live.input.claimToken, HANDLE);
    await elapse(20);

    expect(await store.sweep({ retentionMs: 0, dryRun: true })).toMatchObject({ trimmed: 1 });
    expect(await store.getTask(finishedTasks[0]!.taskId)).toBeDefined();
    expect(await store.sweep({ retentionMs: 0 })).toEqual({ expired: [], trimmed: 1 });
    for (const task of finishedTasks) {
      expect(await store.getTask(task.taskId)).toBeUndefined();
      expect(await store.findTask(finished.record.id, task.actor)).toBeUndefined();
    }
    expect(await store.listTasks('user:bob', { limit: 10 })).toEqual([]);
    expect(await store.listTasks('user:alice', { limit: 10 })).toEqual([liveTask]);
    const kept = await store.getTask(liveTask.taskId);
    expect(kept?.record).toMatchObject({ state: 'dispatched', upstreamTask: HANDLE });
  });

  it("watchTask reads the first cancel of any of the execution's tasks", async () => {
    const { record } = await executionIn('dispatched');
    const alice = await store.openTask(taskInput(record.id));
    const bob = await store.openTask(taskInput(record.id, { actor: 'user:bob' }));
    expect((await store.watchTask(record.id))?.cancelRequestedAt).toBeNull();
    await store.requestTaskCancel(bob.taskId);
    const first = (await store.watchTask(record.id))?.cancelRequestedAt;
    expect(first).toBe((await store.getTask(bob.taskId))?.task.cancelRequestedAt);
    await elapse(5);
    await store.requestTaskCancel(alice.taskId);
    expect((await store.watchTask(record.id))?.cancelRequestedAt).toBe(first);
  });
});
