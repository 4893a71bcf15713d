import { describe, expect, it } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import {
  ALICE as alice,
  libraryCall,
  engineOnManualClock as setup,
} from '../../test/support/engine-setup.js';
import { Gate } from '../../test/support/gate.js';
import type { ToolContract } from '../contracts/contract.js';
import type { ToolResult } from '../store/outcome.js';
import { idemCodeOf, META } from './answers.js';
import type { Caller, Rerun } from './call.js';

// The rule that tells a retry of an answered call from a deliberate repeat (docs/contracts.md,
// "Retry, repeat, new action"): within one session, a repeat of a completed, answered call is a
// new action once another call with effects started after that answer and completed before the
// repeat arrived; across sessions a repeat inside the window stays a retry.

const cautious: ToolContract | undefined = undefined; // what a tool that declares nothing gets
const refOf = (r: ToolResult) => r._meta?.[META.executionId] as string;
const replayed = (r: ToolResult) => r._meta?.[META.replayed] === true;
const call = (
  tool: string,
  args: unknown,
  caller: Caller = alice,
  contract: ToolContract | undefined = cautious,
) => libraryCall(contract, args, caller, tool);

/** One target per tool, each counting what reached it. */
function targets() {
  const byTool = new Map<string, CountingTarget>();
  return (tool: string, options?: ConstructorParameters<typeof CountingTarget>[0]) => {
    const target = byTool.get(tool) ?? new CountingTarget(options);
    byTool.set(tool, target);
    return target;
  };
}

describe('a repeat after the session moved on is a new action', () => {
  it('write v1 → write v2 → write v1: the third runs, linked to the first', async () => {
    const { engine, store } = setup();
    const target = targets()('write_file');
    const v1 = await engine.execute(call('write_file', { content: 'v1' }), target.dispatch);
    await engine.execute(call('write_file', { content: 'v2' }), target.dispatch);
    const again = await engine.execute(call('write_file', { content: 'v1' }), target.dispatch);
    expect(target.invocations).toBe(3);
    expect(replayed(again)).toBe(false);
    expect(refOf(again)).not.toBe(refOf(v1));
    const link = async (id: string) => (await store.journalFor(id)).find((e) => e.kind === 'repeat')?.detail;
    expect(await link(refOf(v1))).toEqual({ repeated_by: refOf(again), reason: 'moved_on' });
    expect(await link(refOf(again))).toEqual({ repeat_of: refOf(v1), reason: 'moved_on' });
  });

  it('create X → delete X → create X: the second create runs', async () => {
    const { engine } = setup();
    const tool = targets();
    await engine.execute(call('create_entities', { name: 'X' }), tool('create_entities').dispatch);
    await engine.execute(call('delete_entities', { name: 'X' }), tool('delete_entities').dispatch);
    await engine.execute(call('create_entities', { name: 'X' }), tool('create_entities').dispatch);
    expect(tool('create_entities').invocations).toBe(2);
  });

  it('a repeat with nothing in between (a toggle pressed twice) cannot be told from a retry: replayed, the note first', async () => {
    const { engine } = setup();
    const target = targets()('toggle');
    const first = await engine.execute(call('toggle', {}), target.dispatch);
    const again = await engine.execute(call('toggle', {}), target.dispatch);
    expect(target.invocations).toBe(1);
    expect(replayed(again)).toBe(true);
    expect((again.content[0] as { text: string }).text).toMatch(/^\[idem\] Replayed, not run again/);
    expect(again.content.slice(1)).toEqual(first.content);
  });

  it('across sessions a repeat stays a retry: a reconnected agent gets the stored result', async () => {
    const { engine } = setup();
    const tool = targets();
    await engine.execute(call('write_file', { content: 'v1' }), tool('write_file').dispatch);
    await engine.execute(call('write_file', { content: 'v2' }), tool('write_file').dispatch);
    const reconnected = { ...alice, session: 's2' };
    const again = await engine.execute(
      call('write_file', { content: 'v1' }, reconnected),
      tool('write_file').dispatch,
    );
    expect(replayed(again)).toBe(true);
    expect(tool('write_file').invocations).toBe(2);
  });

  it('a restarted agent re-running its plan from the top runs nothing twice', async () => {
    const { engine } = setup();
    const tool = targets();
    // First run: X answered, Y answered too (but its answer was lost on the way), then the agent died.
    await engine.execute(call('x', {}), tool('x').dispatch);
    await engine.execute(call('y', {}), tool('y').dispatch);
    // The restarted agent is a new session and starts its plan over: X, then Y.
    const restarted = { ...alice, session: 's2' };
    const x = await engine.execute(call('x', {}, restarted), tool('x').dispatch);
    const y = await engine.execute(call('y', {}, restarted), tool('y').dispatch);
    expect([tool('x').invocations, tool('y').invocations]).toEqual([1, 1]);
    expect([replayed(x), replayed(y)]).toEqual([true, true]);
    // Having got both, it goes on: its next repeat of X after another call is deliberate.
    await engine.execute(call('z', {}, restarted), tool('z').dispatch);
    await engine.execute(call('x', {}, restarted), tool('x').dispatch);
    expect(tool('x').invocations).toBe(2);
  });

  it('parallel calls of one turn: a call that started before the answer does not move the session on', async () => {
    const { engine } = setup();
    const tool = targets();
    const slow = new Gate();
    const x = tool('x', {
      respond: (n) => slow.wait().then(() => ({ content: [{ type: 'text', text: `x #${n}` }] })),
    });
    // One model turn: X and Y in parallel; Y finishes first, X's answer is (say) lost.
    const first = engine.execute(call('x', {}), x.dispatch);
    await slow.started;
    await engine.execute(call('y', {}), tool('y').dispatch);
    slow.open();
    await first;
    // The next turn retries X: Y started before X was answered, so it is no sign of a new action.
    const retry = await engine.execute(call('x', {}), x.dispatch);
    expect(replayed(retry)).toBe(true);
    expect(x.invocations).toBe(1);
  });

  it('a retry beside a new call in the next turn: the new call does not count, even when it completes first', async () => {
    const { engine } = setup();
    const tool = targets();
    await engine.execute(call('x', {}), tool('x').dispatch);
    // The next turn: a new call Z and the retry of X, in parallel. Z is still running when X arrives.
    const zGate = new Gate();
    const z = tool('z', {
      respond: (n) => zGate.wait().then(() => ({ content: [{ type: 'text', text: `z #${n}` }] })),
    });
    const zCall = engine.execute(call('z', {}), z.dispatch);
    await zGate.started;
    const retryX = engine.execute(call('x', {}), tool('x').dispatch);
    // Z completes while X's retry is being handled: it did not complete before X arrived.
    zGate.open();
    await zCall;
    expect(replayed(await retryX)).toBe(true);
    expect(tool('x').invocations).toBe(1);
  });

  it('what did not take effect does not move the session on: a read-only call, a replay, a failure', async () => {
    const { engine } = setup();
    const tool = targets();
    await engine.execute(call('x', {}), tool('x').dispatch);
    await engine.execute(call('read', {}, alice, { replay: 'read_only' }), tool('read').dispatch);
    await engine.execute(call('x', {}), tool('x').dispatch); // a replay
    const failing = tool('pay', {
      respond: () => ({ isError: true, content: [{ type: 'text', text: 'no' }] }),
    });
    await engine.execute(call('pay', {}), failing.dispatch);
    const again = await engine.execute(call('x', {}), tool('x').dispatch);
    expect(replayed(again)).toBe(true);
    expect(tool('x').invocations).toBe(1);
  });

  it('a business key or a window names the action: a repeat after other calls is still that action', async () => {
    const { engine } = setup();
    const tool = targets();
    for (const contract of [
      { replay: 'keyed', scope: { business_key: 'order_id' } },
      { replay: 'review', scope: { window: '10m' } },
    ] satisfies ToolContract[]) {
      const charge = (order: string) => call('charge', { order_id: order }, alice, contract);
      await engine.execute(charge(`A-${contract.replay}`), tool('charge').dispatch);
      await engine.execute(charge(`B-${contract.replay}`), tool('charge').dispatch);
      const again = await engine.execute(charge(`A-${contract.replay}`), tool('charge').dispatch);
      expect(replayed(again)).toBe(true);
    }
    expect(tool('charge').invocations).toBe(4);
  });

  it('after_completion: replay keeps the stored result whatever ran since', async () => {
    const { engine } = setup();
    const tool = targets();
    const replays: ToolContract = { replay: 'review', after_completion: 'replay' };
    await engine.execute(call('x', {}, alice, replays), tool('x').dispatch);
    await engine.execute(call('y', {}), tool('y').dispatch);
    expect(replayed(await engine.execute(call('x', {}, alice, replays), tool('x').dispatch))).toBe(true);
    expect(tool('x').invocations).toBe(1);
  });

  it('a key the caller named (a gateway in front) is that one action, whatever ran since', async () => {
    const { engine } = setup();
    const tool = targets();
    const keyed = { ...call('x', {}), idempotencyKey: 'exe_from_the_gateway' };
    await engine.execute(keyed, tool('x').dispatch);
    await engine.execute(call('y', {}), tool('y').dispatch);
    expect(replayed(await engine.execute(keyed, tool('x').dispatch))).toBe(true);
    expect(tool('x').invocations).toBe(1);
  });

  it('a deliberate repeat through the status tool is a call with effects of its session', async () => {
    const { engine } = setup();
    const tool = targets();
    const x = await engine.execute(call('x', {}), tool('x').dispatch);
    await engine.execute(call('y', {}), tool('y').dispatch);
    // Y answered, then X repeated on purpose (which ran), then Y again: the session moved on since Y.
    const rerun: Rerun = async (r) => ({ call: call(r.tool, r.arguments), dispatch: tool(r.tool).dispatch });
    await engine.repeat(refOf(x), alice, rerun);
    expect(tool('x').invocations).toBe(2);
    const yAgain = await engine.execute(call('y', {}), tool('y').dispatch);
    expect(replayed(yAgain)).toBe(false);
    expect(tool('y').invocations).toBe(2);
  });

  it('without a session (2026-07-28 stateless HTTP) there is no order to read: a repeat is a retry', async () => {
    const { engine } = setup();
    const tool = targets();
    const stateless = { ...alice, session: null };
    await engine.execute(call('x', {}, stateless), tool('x').dispatch);
    await engine.execute(call('y', {}, stateless), tool('y').dispatch);
    const again = await engine.execute(call('x', {}, stateless), tool('x').dispatch);
    expect(replayed(again)).toBe(true);
    expect(idemCodeOf(again)).toBeUndefined();
  });
});
