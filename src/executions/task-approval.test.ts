import { describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { ALICE, libraryCall, engineOnManualClock as setup } from '../../test/support/engine-setup.js';
import { PATIENTLY } from '../../test/support/wait.js';
import { decideApproval } from '../approval/decide.js';
import { resolveContract, type ToolContract } from '../contracts/contract.js';
import { META } from './answers.js';
import type { ToolCall } from './call.js';
import { APPROVAL_INPUT_KEY } from './task-approval.js';
import { taskOf } from './tasks.js';

/** A task that waits for approval (docs/tasks.md, "Approval"): the engine on the memory store. */
const GUARDED: ToolContract = {
  replay: 'review',
  task: 'required',
  task_after: '0s',
  approval: 'every_call',
  approval_timeout: '10m',
};
const asTask = (c: ToolCall): ToolCall => ({ ...c, task: { generation: 'v2' } });

function guardedEngine(contract: ToolContract = GUARDED) {
  const parts = setup();
  parts.engine.registerContract('charge_card', resolveContract(contract, undefined));
  const target = new CountingTarget();
  return { ...parts, target };
}

async function awaitingTask(engine: ReturnType<typeof setup>['engine'], target: CountingTarget, n: number) {
  const answer = await engine.execute(asTask(libraryCall(GUARDED, { n })), target.dispatch);
  const task = taskOf(answer);
  return { taskId: task?.taskId as string, ref: answer._meta?.[META.executionId] as string, task };
}

const statusOf = async (engine: ReturnType<typeof setup>['engine'], taskId: string) =>
  (await engine.getTask(taskId, ALICE.actor))?.status;

describe('a task that waits for approval', () => {
  it('is input_required with the approval form; accepted by tasks/update, it runs once and completes', async () => {
    const { engine, target } = guardedEngine();
    const { taskId, task } = await awaitingTask(engine, target, 1);
    expect(task?.status).toBe('input_required');
    const asked = (await engine.getTask(taskId, ALICE.actor))?.inputRequests;
    expect(asked?.[APPROVAL_INPUT_KEY]).toMatchObject({ method: 'elicitation/create' });
    expect(target.invocations).toBe(0);
    await engine.updateTask(taskId, ALICE.actor, { [APPROVAL_INPUT_KEY]: { action: 'accept' } });
    await vi.waitFor(async () => expect(await statusOf(engine, taskId)).toBe('completed'), PATIENTLY);
    expect(target.invocations).toBe(1);
  });

  it('approved by an operator in another process (the store only), it runs once: the holder reads the store', async () => {
    const { engine, store, target } = guardedEngine();
    const { taskId, ref } = await awaitingTask(engine, target, 2);
    // Not this engine's approve(): nothing in this process hears of it.
    expect((await decideApproval(store, ref, 'approved', { by: 'ops', via: 'cli' })).decided).toBe(true);
    await vi.waitFor(async () => expect(await statusOf(engine, taskId)).toBe('completed'), PATIENTLY);
    expect(target.invocations).toBe(1);
    // The client also calls again with the same intent: the same task, nothing sent twice.
    const again = await engine.execute(asTask(libraryCall(GUARDED, { n: 2 })), target.dispatch);
    expect(taskOf(again)?.taskId).toBe(taskId);
    expect(target.invocations).toBe(1);
  });

  it('declined by tasks/update: denied, nothing sent', async () => {
    const { engine, store, target } = guardedEngine();
    const { taskId, ref } = await awaitingTask(engine, target, 3);
    await engine.updateTask(taskId, ALICE.actor, { [APPROVAL_INPUT_KEY]: { action: 'decline' } });
    await vi.waitFor(async () => expect((await store.get(ref))?.state).toBe('denied'), PATIENTLY);
    expect(await statusOf(engine, taskId)).toBe('completed');
    expect((await engine.getTask(taskId, ALICE.actor))?.result).toMatchObject({ isError: true });
    expect(target.invocations).toBe(0);
  });

  it('cancelled while it waits: nothing runs, also when approved afterwards', async () => {
    const { engine, store, target } = guardedEngine();
    const { taskId, ref } = await awaitingTask(engine, target, 4);
    expect((await engine.cancelTask(taskId, ALICE.actor))?.status).toBe('cancelled');
    await engine.approve(ref, 'ops');
    expect((await store.get(ref))?.state).toBe('failed');
    expect(target.invocations).toBe(0);
  });

  it("another actor's tasks/update is not found and decides nothing", async () => {
    const { engine, store, target } = guardedEngine();
    const { taskId, ref } = await awaitingTask(engine, target, 5);
    const bob = await engine.updateTask(taskId, 'token:bob', { [APPROVAL_INPUT_KEY]: { action: 'accept' } });
    expect(bob).toBeUndefined();
    expect((await store.get(ref))?.state).toBe('awaiting_approval');
    expect(target.invocations).toBe(0);
  });

  it('under elicitation: never, only an operator decides: the task is working and names the command', async () => {
    const { engine, target } = guardedEngine({ ...GUARDED, elicitation: 'never' });
    const answer = await engine.execute(
      asTask(libraryCall({ ...GUARDED, elicitation: 'never' }, { n: 6 })),
      target.dispatch,
    );
    const view = taskOf(answer);
    expect(view?.status).toBe('working');
    expect(view?.statusMessage).toContain('idem approvals approve');
  });
});
