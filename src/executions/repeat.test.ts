import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CountingTarget } from '../../test/support/counting-target.js';
import { libraryCall } from '../../test/support/engine-setup.js';
import { repeatRace } from '../../test/support/repeat-race.js';
import type { ToolContract } from '../contracts/contract.js';
import { IDEM_CODES, OutcomeUnknownError } from '../errors.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ToolResult } from '../store/outcome.js';
import { SqliteStore } from '../store/sqlite/index.js';
import { idemCodeOf, META } from './answers.js';
import type { Caller, Dispatch, Rerun, ToolCall } from './call.js';
import { ExecutionEngine } from './engine.js';

/**
 * A deliberate repeat (the status tool's `action: "repeat"`) and the replay
 * note that points to it: the engine's rules, against a store and a target
 * that counts what reaches it.
 */

const fingerprinter = new Fingerprinter(randomBytes(32));
const alice: Caller = { actor: 'local:alice', session: 's1' };
const args = { city: 'Chicago' };
/** What an un-annotated tool gets: the cautious defaults. */
const cautious: ToolContract | undefined = undefined;

const call = (contract: ToolContract | undefined, a: unknown, caller: Caller = alice): ToolCall =>
  libraryCall(contract, a, caller, 'get_weather');

/** What a surface does on a repeat: the same tool, the remembered arguments, this caller. */
function rerunWith(dispatch: Dispatch, contract: ToolContract | undefined = cautious, caller = alice): Rerun {
  return async (remembered) => ({ call: call(contract, remembered.arguments, caller), dispatch });
}

const refOf = (r: ToolResult) =>
  (r.structuredContent as { idem?: { ref: string } } | undefined)?.idem?.ref ??
  (r._meta?.[META.executionId] as string);
const lastText = (r: ToolResult) => (r.content.at(-1) as { text: string }).text;

function setup(options: { approver?: ConstructorParameters<typeof ExecutionEngine>[0]['approver'] } = {}) {
  const store = new MemoryStore();
  const engine = new ExecutionEngine({ store, fingerprinter, ...options });
  return { store, engine };
}

describe('replays say so', () => {
  it('a replay says so before the original content; structuredContent is untouched; _meta says when and how to repeat', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const first = await engine.execute(call(cautious, args), target.dispatch);
    // A restarted agent (another session) asks again: the answer it lost.
    const again = await engine.execute(call(cautious, args, { ...alice, session: 's2' }), target.dispatch);
    const ref = refOf(first);
    expect(target.invocations).toBe(1);
    expect(again.content.slice(1)).toEqual(first.content);
    expect(again.structuredContent).toEqual(first.structuredContent);
    const note = (again.content[0] as { text: string }).text;
    expect(note).toContain(`stored result of execution ${ref}`);
    expect(note).toContain('nothing was run now');
    expect(note).toContain(`idem_execution_status with {"ref":"${ref}","action":"repeat"}`);
    expect(again._meta).toMatchObject({
      [META.replayed]: true,
      [META.executionId]: ref,
      [META.repeat]: { tool: 'idem_execution_status', arguments: { ref, action: 'repeat' } },
    });
    expect(Date.parse(again._meta?.[META.executedAt] as string)).not.toBeNaN();
    // The fresh result carries no note.
    expect(first.content).toHaveLength(1);
  });
});

describe('a deliberate repeat', () => {
  it('runs a finished execution again as a new one, journaled as a repeat of it; later identical calls replay the new one', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const first = await engine.execute(call(cautious, args), target.dispatch);
    const old = refOf(first);
    const repeated = await engine.repeat(old, alice, rerunWith(target.dispatch));
    expect(target.invocations).toBe(2);
    expect(repeated.content).toEqual([{ type: 'text', text: 'done #2' }]);
    const fresh = refOf(repeated);
    expect(fresh).not.toBe(old);
    expect(repeated._meta?.[META.repeatOf]).toBe(old);
    expect((await store.list({ tool: 'get_weather' })).map((r) => r.state)).toEqual([
      'completed',
      'completed',
    ]);
    expect((await store.journalFor(fresh)).find((e) => e.kind === 'repeat')?.detail).toEqual({
      repeat_of: old,
    });
    expect((await store.journalFor(old)).find((e) => e.kind === 'repeat')?.detail).toEqual({
      repeated_by: fresh,
    });

    const later = await engine.execute(call(cautious, args), target.dispatch);
    expect(target.invocations).toBe(2);
    expect(refOf(later)).toBe(fresh);
    expect(later.content.at(-1)).toEqual({ type: 'text', text: 'done #2' });
    expect(later.content).toHaveLength(2);
  });

  it('repeating one ref twice (a resent request, a lost answer) runs it once: the second gets the repeat', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const old = refOf(await engine.execute(call(cautious, args), target.dispatch));
    const [a, b] = await Promise.all([
      engine.repeat(old, alice, rerunWith(target.dispatch)),
      engine.repeat(old, alice, rerunWith(target.dispatch)),
    ]);
    const c = await engine.repeat(old, alice, rerunWith(target.dispatch));
    expect(target.invocations).toBe(2);
    const fresh = [a, b].find((r) => r._meta?.[META.repeatOf] === old) as ToolResult;
    expect(fresh).toBeDefined();
    for (const r of [a, b, c]) {
      if (r === fresh) continue;
      // The other one is still running (in flight) or already done (its stored result).
      expect(refOf(r)).toBe(refOf(fresh));
    }
    expect(c._meta?.[META.replayed]).toBe(true);
  });

  it('a failed execution can be repeated', async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: (n) =>
        n === 1
          ? { isError: true, content: [{ type: 'text', text: 'busy' }] }
          : { content: [{ type: 'text', text: 'ok' }] },
    });
    const old = refOf(await engine.execute(call(cautious, args), target.dispatch));
    const repeated = await engine.repeat(old, alice, rerunWith(target.dispatch));
    expect(repeated.isError).toBeFalsy();
    expect(repeated.content).toEqual([{ type: 'text', text: 'ok' }]);
  });

  it('is refused, saying why, while the execution runs; once it has finished it runs', async () => {
    const { engine } = setup();
    let finish: () => void = () => {};
    const target = new CountingTarget({
      respond: (n) =>
        n === 1
          ? new Promise<ToolResult>((resolve) => {
              finish = () => resolve({ content: [{ type: 'text', text: 'slow' }] });
            })
          : { content: [{ type: 'text', text: `run ${n}` }] },
    });
    const running = engine.execute(call(cautious, args), target.dispatch);
    await expect.poll(() => target.invocations).toBe(1);
    const old = (await engine.store.list({ tool: 'get_weather' }))[0]?.id as string;
    const refused = await engine.repeat(old, alice, rerunWith(target.dispatch));
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_IN_FLIGHT);
    expect(lastText(refused)).toContain('A repeat is refused while it runs');
    expect(target.invocations).toBe(1);
    finish();
    await running;
    const repeated = await engine.repeat(old, alice, rerunWith(target.dispatch));
    expect(repeated.content).toEqual([{ type: 'text', text: 'run 2' }]);
  });

  it('is refused while the outcome is unknown (it may have happened) and while it awaits approval', async () => {
    const { engine } = setup();
    const target = new CountingTarget({
      respond: () => {
        throw new OutcomeUnknownError('connection lost after send');
      },
    });
    const unknown = refOf(await engine.execute(call(cautious, args), target.dispatch));
    const refused = await engine.repeat(unknown, alice, rerunWith(target.dispatch));
    expect(idemCodeOf(refused)).toBe(IDEM_CODES.IDEM_REVIEW_REQUIRED);
    expect(lastText(refused)).toContain('could make it happen twice');

    const approval: ToolContract = { replay: 'review', approval: 'every_call' };
    const waiting = refOf(await engine.execute(call(approval, { city: 'Oslo' }), target.dispatch));
    const notYet = await engine.repeat(waiting, alice, rerunWith(target.dispatch, approval));
    expect(idemCodeOf(notYet)).toBe(IDEM_CODES.IDEM_AWAITING_APPROVAL);
    expect(target.invocations).toBe(1);
  });

  it('only for the actor it belongs to: anyone else is told it does not exist', async () => {
    const { engine } = setup();
    const target = new CountingTarget();
    const old = refOf(await engine.execute(call(cautious, args), target.dispatch));
    const mallory: Caller = { actor: 'local:mallory', session: 's2' };
    const answer = await engine.repeat(old, mallory, rerunWith(target.dispatch, cautious, mallory));
    expect(idemCodeOf(answer)).toBe(IDEM_CODES.IDEM_UNKNOWN_EXECUTION);
    expect(target.invocations).toBe(1);
  });

  it('in a process that never saw the arguments: nothing runs, the stored result is retired, and the next identical call runs afresh', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const old = refOf(await engine.execute(call(cautious, args), target.dispatch));
    // Another gateway process on the same store: it has the record, not the arguments.
    const other = new ExecutionEngine({ store, fingerprinter });
    const answer = await other.repeat(old, alice, rerunWith(target.dispatch));
    expect(idemCodeOf(answer)).toBe(IDEM_CODES.IDEM_NOT_EXECUTED);
    expect(lastText(answer)).toContain('call get_weather again with the same arguments');
    expect(target.invocations).toBe(1);
    const next = await other.execute(call(cautious, args), target.dispatch);
    expect(target.invocations).toBe(2);
    expect(next._meta?.[META.replayed]).toBeUndefined();
    expect(refOf(next)).not.toBe(old);
  });

  it('a process that replayed a result can repeat it (the replay taught it the arguments)', async () => {
    const { engine, store } = setup();
    const target = new CountingTarget();
    const old = refOf(await engine.execute(call(cautious, args), target.dispatch));
    const other = new ExecutionEngine({ store, fingerprinter });
    expect((await other.execute(call(cautious, args), target.dispatch))._meta?.[META.replayed]).toBe(true);
    const repeated = await other.repeat(old, alice, rerunWith(target.dispatch));
    expect(repeated._meta?.[META.repeatOf]).toBe(old);
    expect(target.invocations).toBe(2);
  });

  it('the handler changing its arguments does not change what a repeat sends', async () => {
    const { engine } = setup();
    const seen: unknown[] = [];
    const mutable = { city: 'Chicago' };
    const old = refOf(
      await engine.execute(call(cautious, mutable), async () => {
        seen.push(structuredClone(mutable));
        mutable.city = 'changed by the handler';
        return { content: [{ type: 'text', text: 'ok' }] };
      }),
    );
    await engine.repeat(old, alice, async (remembered) => ({
      call: call(cautious, remembered.arguments),
      dispatch: async () => {
        seen.push(remembered.arguments);
        return { content: [{ type: 'text', text: 'ok' }] };
      },
    }));
    expect(seen).toEqual([{ city: 'Chicago' }, { city: 'Chicago' }]);
  });

  it('racing repeats of one ref through two connections to one SQLite file run it once (full count: scripts/repeat-race.ts)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-repeat-race-'));
    try {
      const path = join(dir, 'idem.db');
      const stores = [await SqliteStore.open({ path }), await SqliteStore.open({ path })];
      const result = await repeatRace({ stores, rounds: 40, repeatsPerRound: 8 });
      for (const store of stores) await store.close();
      expect(result.violations).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
