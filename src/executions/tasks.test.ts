import { describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { ALICE, libraryCall, engineOnManualClock as setup } from '../../test/support/engine-setup.js';
import { Gate } from '../../test/support/gate.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import { IDEM_CODES, OutcomeUnknownError } from '../errors.js';
import type { ToolResult } from '../store/outcome.js';
import { idemCodeOf, META } from './answers.js';
import type { Caller, DispatchContext, ToolCall } from './call.js';
import { taskOf } from './tasks.js';

const BOB: Caller = { actor: 'token:bob', session: 's2' };
const asTask = (c: ToolCall, generation: 'v1' | 'v2' = 'v2'): ToolCall => ({ ...c, task: { generation } });
const optionalAtOnce: ToolContract = { replay: 'review', task: 'optional', task_after: '0s' };
/** Required, with time for an in-process target to answer first (its answer takes microseconds). */
const requiredAfter: ToolContract = { replay: 'review', task: 'required', task_after: '5m' };

/** A target held until the test opens it: the call is still running while the test looks at its task. */
function heldTarget(
  respond: (n: number) => ToolResult = (n) => ({ content: [{ type: 'text', text: `done #${n}` }] }),
) {
  const gate = new Gate();
  const signals: (AbortSignal | undefined)[] = [];
  const target = new CountingTarget({
    respond: async (n, ctx: DispatchContext) => {
      signals.push(ctx.signal);
      await gate.wait();
      if (ctx.signal?.aborted) throw new OutcomeUnknownError('cancelled after it was sent');
      return respond(n);
    },
  });
  return { gate, target, signals };
}

describe('the engine answers a call as a task, for a caller that can take one', () => {
  it('at once under task_after 0s: the task is stored, working, and ends with the outcome', async () => {
    const { engine, store } = setup();
    const { gate, target } = heldTarget();
    const answer = await engine.execute(asTask(libraryCall(optionalAtOnce, { n: 1 })), target.dispatch);
    const task = taskOf(answer);
    expect(task).toMatchObject({ status: 'working', ttlMs: null, pollIntervalMs: 1000 });
    expect(task?.taskId).toMatch(/^tsk_[A-Za-z0-9_-]{43}$/);
    const taskId = task?.taskId as string;
    // In the store before the answer: any gateway of the store finds it.
    expect((await store.getTask(taskId))?.record.state).toBe('dispatched');
    expect(await engine.getTask(taskId, ALICE.actor)).toMatchObject({ status: 'working' });
    gate.open();
    await vi.waitFor(
      async () => expect((await engine.getTask(taskId, ALICE.actor))?.status).toBe('completed'),
      PATIENTLY,
    );
    const done = await engine.getTask(taskId, ALICE.actor);
    expect(done?.result).toMatchObject({ content: [{ type: 'text', text: 'done #1' }] });
    expect(target.invocations).toBe(1);
    const journal = (await store.journalFor((await store.getTask(taskId))?.record.id as string)).map(
      (e) => e.kind,
    );
    expect(journal).toEqual(expect.arrayContaining(['task_created', 'dispatched', 'outcome', 'delivered']));
  });

  it('a duplicate in flight gets the same task; another actor cannot see it', async () => {
    const { engine } = setup();
    const { gate, target } = heldTarget();
    const call = asTask(libraryCall(optionalAtOnce, { n: 2 }));
    const first = taskOf(await engine.execute(call, target.dispatch));
    const again = taskOf(await engine.execute(call, target.dispatch));
    expect(again?.taskId).toBe(first?.taskId);
    expect(target.invocations).toBe(1);
    // The status tool names the caller's task beside the execution.
    const ref = (await engine.execute(call, target.dispatch))._meta?.[META.executionId] as string;
    expect((await engine.status(ref, ALICE.actor))._meta?.[META.taskId]).toBe(first?.taskId);
    expect(await engine.getTask(first?.taskId as string, BOB.actor)).toBeUndefined();
    expect(await engine.cancelTask(first?.taskId as string, BOB.actor)).toBeUndefined();
    gate.open();
  });

  it('a caller without tasks is answered as always (IDEM_IN_FLIGHT for the duplicate)', async () => {
    const { engine } = setup();
    const { gate, target } = heldTarget();
    const call = libraryCall(optionalAtOnce, { n: 3 });
    const running = engine.execute(call, target.dispatch);
    await vi.waitFor(() => expect(target.invocations).toBe(1), PATIENTLY);
    const duplicate = await engine.execute(call, target.dispatch);
    expect(idemCodeOf(duplicate)).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    expect(taskOf(duplicate)).toBeUndefined();
    gate.open();
    expect(taskOf(await running)).toBeUndefined();
  });

  it('under required, a call that finished first is a task too, completed; a failure of the target is completed with isError', async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: () => ({ isError: true, content: [{ type: 'text', text: 'no' }] }),
    });
    const answer = await engine.execute(asTask(libraryCall(requiredAfter, { n: 4 })), target.dispatch);
    const task = taskOf(answer);
    expect(task).toMatchObject({ status: 'completed', result: { isError: true } });
    // The target said no, so nothing took effect: a new request is a new attempt, with a task of its own.
    const again = taskOf(await engine.execute(asTask(libraryCall(requiredAfter, { n: 4 })), target.dispatch));
    expect(again?.taskId).not.toBe(task?.taskId);
    expect(target.invocations).toBe(2);
    // Where failures are kept, the repeat gets the same (ended) task, and nothing runs again.
    const keeps = { ...requiredAfter, after_failure: 'replay' } as const;
    const kept = taskOf(await engine.execute(asTask(libraryCall(keeps, { n: 5 })), target.dispatch));
    const same = taskOf(await engine.execute(asTask(libraryCall(keeps, { n: 5 })), target.dispatch));
    expect(same?.taskId).toBe(kept?.taskId);
    expect(target.invocations).toBe(3);
  });

  it('an unknown outcome is never a failed task: it stays working and says what must happen', async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: () => {
        throw new OutcomeUnknownError('the connection was lost after sending');
      },
    });
    const answer = await engine.execute(asTask(libraryCall(requiredAfter, { n: 5 })), target.dispatch);
    const task = taskOf(answer);
    expect(task?.status).toBe('working');
    expect(task?.statusMessage).toMatch(
      /an operator must review it \(idem executions resolve exe_\S+ completed\|failed\)/,
    );
  });

  it('tasks/cancel after dispatch aborts the dispatch: the task is cancelled, the execution unknown', async () => {
    const { engine, store } = setup();
    const { gate, target, signals } = heldTarget();
    const task = taskOf(await engine.execute(asTask(libraryCall(optionalAtOnce, { n: 6 })), target.dispatch));
    const taskId = task?.taskId as string;
    await vi.waitFor(() => expect(signals).toHaveLength(1), PATIENTLY);
    const cancelled = await engine.cancelTask(taskId, ALICE.actor);
    expect(cancelled?.status).toBe('cancelled');
    expect(cancelled?.statusMessage).toMatch(/whether it took effect is not known/);
    expect(signals[0]?.aborted).toBe(true);
    gate.open();
    const id = (await store.getTask(taskId))?.record.id as string;
    await vi.waitFor(async () => expect((await store.get(id))?.state).toBe('unknown'), PATIENTLY);
    expect((await engine.getTask(taskId, ALICE.actor))?.status).toBe('cancelled');
    expect((await store.journalFor(id)).filter((e) => e.kind === 'task_cancel')).toHaveLength(1);
  });

  it('a cancel of a task whose outcome is in changes nothing', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const task = taskOf(await engine.execute(asTask(libraryCall(requiredAfter, { n: 7 })), target.dispatch));
    expect((await engine.cancelTask(task?.taskId as string, ALICE.actor))?.status).toBe('completed');
  });

  it("lists an actor's tasks a page at a time, and no one else's", async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const answer = await engine.execute(asTask(libraryCall(requiredAfter, { n }), 'v1'), target.dispatch);
      ids.push(taskOf(answer)?.taskId as string);
    }
    await engine.execute(asTask(libraryCall(requiredAfter, { n: 9 }, BOB)), target.dispatch);
    const first = await engine.listTasks(ALICE.actor, undefined, 2);
    expect(first.tasks).toHaveLength(2);
    const rest = await engine.listTasks(ALICE.actor, first.next, 2);
    expect([...first.tasks, ...rest.tasks].map((t) => t.taskId).sort()).toEqual([...ids].sort());
    expect(rest.next).toBeUndefined();
  });

  it("input the target asks for is the task's: input_required, answered key by key with tasks/update", async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: async (_n, ctx) => {
        const answers = await ctx.askInput?.({
          first: { method: 'elicitation/create', params: { message: 'name?' } },
          second: { method: 'elicitation/create', params: { message: 'sure?' } },
        });
        return { content: [{ type: 'text', text: JSON.stringify(answers) }] };
      },
    });
    const task = taskOf(
      await engine.execute(asTask(libraryCall(optionalAtOnce, { n: 10 })), target.dispatch),
    );
    const taskId = task?.taskId as string;
    await vi.waitFor(
      async () => expect((await engine.getTask(taskId, ALICE.actor))?.status).toBe('input_required'),
      PATIENTLY,
    );
    expect(Object.keys((await engine.getTask(taskId, ALICE.actor))?.inputRequests ?? {})).toEqual([
      'first',
      'second',
    ]);
    // Another actor's answers, and a key that is not open, change nothing.
    expect(await engine.updateTask(taskId, BOB.actor, { first: { action: 'accept' } })).toBeUndefined();
    const partly = await engine.updateTask(taskId, ALICE.actor, {
      first: { action: 'accept', content: { name: 'A' } },
      other: {},
    });
    expect(partly).toMatchObject({ status: 'input_required' });
    expect(Object.keys(partly?.inputRequests ?? {})).toEqual(['second']);
    await engine.updateTask(taskId, ALICE.actor, {
      second: { action: 'accept', content: { confirm: true } },
    });
    await vi.waitFor(
      async () => expect((await engine.getTask(taskId, ALICE.actor))?.status).toBe('completed'),
      PATIENTLY,
    );
    const ended = await engine.getTask(taskId, ALICE.actor);
    const text = (ended?.result?.content as { text: string }[] | undefined)?.[0]?.text;
    expect(JSON.parse(text as string)).toEqual({
      first: { action: 'accept', content: { name: 'A' } },
      second: { action: 'accept', content: { confirm: true } },
    });
    expect(target.invocations).toBe(1);
  });

  it('a task cancelled while its target waits for input ends as not executed', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget({
      respond: async (_n, ctx) => {
        await ctx.askInput?.({ confirm: { method: 'elicitation/create', params: {} } });
        return { content: [{ type: 'text', text: 'deleted' }] };
      },
    });
    const task = taskOf(
      await engine.execute(asTask(libraryCall(optionalAtOnce, { n: 11 })), target.dispatch),
    );
    const taskId = task?.taskId as string;
    await vi.waitFor(
      async () => expect((await engine.getTask(taskId, ALICE.actor))?.status).toBe('input_required'),
      PATIENTLY,
    );
    expect((await engine.cancelTask(taskId, ALICE.actor))?.status).toBe('cancelled');
    const id = (await store.getTask(taskId))?.record.id as string;
    await vi.waitFor(async () => expect((await store.get(id))?.state).toBe('failed'), PATIENTLY);
    expect(idemCodeOf((await store.get(id))?.outcome?.result as ToolResult)).toBe(
      IDEM_CODES.IDEM_NOT_EXECUTED,
    );
  });
});
