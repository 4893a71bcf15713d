import { describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { ALICE, libraryCall, engineOnManualClock as setup } from '../../test/support/engine-setup.js';
import { Gate } from '../../test/support/gate.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import type { TaskStatus } from '../protocol/tasks.js';
import type { ToolCall } from './call.js';
import { taskOf } from './tasks.js';

const optionalAtOnce: ToolContract = { replay: 'review', task: 'optional', task_after: '0s' };
const asTask = (c: ToolCall): ToolCall => ({ ...c, task: { generation: 'v2' } });

/** A task of ALICE's whose target is held until the gate opens. */
async function heldTask(n: number) {
  const { engine } = setup();
  const gate = new Gate();
  const target = new CountingTarget({
    respond: async () => {
      await gate.wait();
      return { content: [{ type: 'text', text: `done #${n}` }] };
    },
  });
  const task = taskOf(await engine.execute(asTask(libraryCall(optionalAtOnce, { n })), target.dispatch));
  return { engine, gate, taskId: task?.taskId as string };
}

describe("the engine's task watch", () => {
  it('hears the task at once, then each change this process makes: the outcome recorded', async () => {
    const { engine, gate, taskId } = await heldTask(1);
    const heard: TaskStatus[] = [];
    const unwatch = await engine.watchTask(taskId, ALICE.actor, (view) => heard.push(view.status));
    expect(unwatch).toBeTypeOf('function');
    await vi.waitFor(() => expect(heard).toEqual(['working']), PATIENTLY);
    gate.open();
    await vi.waitFor(() => expect(heard).toEqual(['working', 'completed']), PATIENTLY);
    expect(engine.taskWatches).toBe(1);
    unwatch?.();
    expect(engine.taskWatches).toBe(0);
  });

  it('a cancel is heard as cancelled', async () => {
    const { engine, gate, taskId } = await heldTask(2);
    const heard: TaskStatus[] = [];
    const unwatch = await engine.watchTask(taskId, ALICE.actor, (view) => heard.push(view.status));
    await vi.waitFor(() => expect(heard).toEqual(['working']), PATIENTLY);
    await engine.cancelTask(taskId, ALICE.actor);
    await vi.waitFor(() => expect(heard.at(-1)).toBe('cancelled'), PATIENTLY);
    unwatch?.();
    gate.open();
  });

  it("another actor's task cannot be watched: it reads as one that does not exist", async () => {
    const { engine, gate, taskId } = await heldTask(3);
    expect(await engine.watchTask(taskId, 'token:bob', () => {})).toBeUndefined();
    expect(await engine.watchTask('tsk_none', ALICE.actor, () => {})).toBeUndefined();
    expect(engine.taskWatches).toBe(0);
    gate.open();
  });
});
