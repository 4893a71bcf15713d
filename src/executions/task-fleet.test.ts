import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { ALICE, libraryCall, engineOnManualClock as setup } from '../../test/support/engine-setup.js';
import { Gate, manualClock } from '../../test/support/gate.js';
import { freshDir, removeTemporaries } from '../../test/support/temp-dirs.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import { IDEM_CODES, OutcomeUnknownError } from '../errors.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ToolResult } from '../store/outcome.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import type { ExecutionStore } from '../store/types.js';
import { idemCodeOf } from './answers.js';
import type { ToolCall } from './call.js';
import { taskOf } from './tasks.js';

// Two engines on one store are two gateways of a fleet: the one that dispatched a task holds its
// dispatch in memory; its client may reach the other. What one is asked, the other must act on.

afterAll(removeTemporaries);

const asTask = (c: ToolCall): ToolCall => ({ ...c, task: { generation: 'v2' } });
const atOnce: ToolContract = { replay: 'review', task: 'optional', task_after: '0s' };

const backends = {
  memory: async (clock: ReturnType<typeof manualClock>) => {
    const store = new MemoryStore({ clock: clock.now });
    return { stores: [store, store] as const, close: async () => {} };
  },
  // Two handles on one database file: two gateways of one host.
  sqlite: async (clock: ReturnType<typeof manualClock>) => {
    const path = join(freshDir('task-fleet'), 'idem.db');
    const a = await SqliteStore.open({ path, clock: clock.now });
    const b = await SqliteStore.open({ path, clock: clock.now });
    return { stores: [a, b] as const, close: async () => Promise.all([a.close(), b.close()]) };
  },
};

async function fleet(kind: keyof typeof backends) {
  const clock = manualClock();
  const { stores, close } = await backends[kind](clock);
  const a = setup({ store: stores[0], clock });
  const b = setup({ store: stores[1], clock });
  return { a: a.engine, b: b.engine, store: stores[0] as ExecutionStore, close };
}

describe.each(Object.keys(backends) as (keyof typeof backends)[])(
  'a task across two gateways on the %s store',
  (kind) => {
    it('input its target asks for on one gateway is shown and answered on the other, key by key, and the values are not kept', async () => {
      const { a, b, store, close } = await fleet(kind);
      try {
        const target = new CountingTarget({
          respond: async (_n, ctx) => {
            const answers = await ctx.askInput?.({
              region: { method: 'elicitation/create', params: { message: 'which region?' } },
              confirm: { method: 'elicitation/create', params: { message: 'sure?' } },
            });
            return { content: [{ type: 'text', text: JSON.stringify(answers) }] };
          },
        });
        const taskId = taskOf(await a.execute(asTask(libraryCall(atOnce, { n: 1 })), target.dispatch))
          ?.taskId as string;
        await vi.waitFor(
          async () => expect((await b.getTask(taskId, ALICE.actor))?.status).toBe('input_required'),
          PATIENTLY,
        );
        const seen = await b.getTask(taskId, ALICE.actor);
        expect(seen?.inputRequests).toEqual({
          region: { method: 'elicitation/create', params: { message: 'which region?' } },
          confirm: { method: 'elicitation/create', params: { message: 'sure?' } },
        });
        // Another actor's answer is not taken: its task does not exist for it.
        expect(await b.updateTask(taskId, 'token:mallory', { region: { action: 'accept' } })).toBeUndefined();
        const partly = await b.updateTask(taskId, ALICE.actor, {
          region: { action: 'accept', content: { region: 'eu-secret-7' } },
        });
        expect(partly?.status).toBe('input_required');
        expect(Object.keys(partly?.inputRequests ?? {})).toEqual(['confirm']);
        // The dispatching gateway shows the same.
        expect(Object.keys((await a.getTask(taskId, ALICE.actor))?.inputRequests ?? {})).toEqual(['confirm']);
        await b.updateTask(taskId, ALICE.actor, { confirm: { action: 'accept', content: { sure: true } } });

        await vi.waitFor(
          async () => expect((await b.getTask(taskId, ALICE.actor))?.status).toBe('completed'),
          PATIENTLY,
        );
        const ended = await b.getTask(taskId, ALICE.actor);
        const text = (ended?.result?.content as { text: string }[] | undefined)?.[0]?.text;
        expect(JSON.parse(text as string)).toEqual({
          region: { action: 'accept', content: { region: 'eu-secret-7' } },
          confirm: { action: 'accept', content: { sure: true } },
        });
        expect(target.invocations).toBe(1);
        const id = (await store.getTask(taskId))?.record.id as string;
        const journal = await store.journalFor(id);
        expect(journal.filter((e) => e.kind === 'task_input').map((e) => e.detail)).toEqual([
          { asked: ['region', 'confirm'] },
          { taskId, answered: ['region'] },
          { taskId, answered: ['confirm'] },
        ]);
        // What the user answered reached the target; the journal and the input's row do not keep it.
        expect(JSON.stringify(journal.filter((e) => e.kind !== 'outcome'))).not.toContain('eu-secret-7');
        expect((await store.watchTask(id))?.input).toBeNull();
      } finally {
        await close();
      }
    });

    it('a cancel answered by the other gateway reaches the dispatch: the target is told, and the outcome is unknown', async () => {
      const { a, b, store, close } = await fleet(kind);
      try {
        const gate = new Gate();
        let signal: AbortSignal | undefined;
        const target = new CountingTarget({
          respond: async (_n, ctx) => {
            signal = ctx.signal;
            await Promise.race([gate.wait(), new Promise((r) => ctx.signal?.addEventListener('abort', r))]);
            if (ctx.signal?.aborted) throw new OutcomeUnknownError('cancelled after it was sent');
            return { content: [{ type: 'text', text: 'deployed' }] };
          },
        });
        const taskId = taskOf(await a.execute(asTask(libraryCall(atOnce, { n: 2 })), target.dispatch))
          ?.taskId as string;
        await vi.waitFor(() => expect(signal).toBeDefined(), PATIENTLY);
        expect((await b.cancelTask(taskId, ALICE.actor))?.status).toBe('cancelled');
        await vi.waitFor(() => expect(signal?.aborted).toBe(true), PATIENTLY);
        const id = (await store.getTask(taskId))?.record.id as string;
        await vi.waitFor(async () => expect((await store.get(id))?.state).toBe('unknown'), PATIENTLY);
        expect((await a.getTask(taskId, ALICE.actor))?.status).toBe('cancelled');
        const cancels = (await store.journalFor(id)).filter((e) => e.kind === 'task_cancel');
        expect(cancels.map((e) => e.detail.before)).toEqual(['outcome']);
        expect(target.invocations).toBe(1);
        gate.open();
      } finally {
        await close();
      }
    });

    it('a cancel answered by the other gateway while the target waits for input: nothing was executed', async () => {
      const { a, b, store, close } = await fleet(kind);
      try {
        let acted = 0;
        const target = new CountingTarget({
          respond: async (_n, ctx) => {
            await ctx.askInput?.({ confirm: { method: 'elicitation/create', params: {} } });
            acted++;
            return { content: [{ type: 'text', text: 'deleted' }] };
          },
        });
        const taskId = taskOf(await a.execute(asTask(libraryCall(atOnce, { n: 3 })), target.dispatch))
          ?.taskId as string;
        await vi.waitFor(
          async () => expect((await b.getTask(taskId, ALICE.actor))?.status).toBe('input_required'),
          PATIENTLY,
        );
        expect((await b.cancelTask(taskId, ALICE.actor))?.status).toBe('cancelled');
        const id = (await store.getTask(taskId))?.record.id as string;
        await vi.waitFor(async () => expect((await store.get(id))?.state).toBe('failed'), PATIENTLY);
        expect(idemCodeOf((await store.get(id))?.outcome?.result as ToolResult)).toBe(
          IDEM_CODES.IDEM_NOT_EXECUTED,
        );
        expect(acted).toBe(0);
        const cancels = (await store.journalFor(id)).filter((e) => e.kind === 'task_cancel');
        expect(cancels.map((e) => e.detail.before)).toEqual(['input']);
        // An answer after the cancel finds nothing open, and changes nothing.
        await b.updateTask(taskId, ALICE.actor, { confirm: { action: 'accept' } });
        expect(acted).toBe(0);
        expect((await a.getTask(taskId, ALICE.actor))?.status).toBe('cancelled');
      } finally {
        await close();
      }
    });
  },
);
