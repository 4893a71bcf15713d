import { beforeEach, expect, it } from 'vitest';
import { taskInputAnsweredEvent, taskInputAskedEvent } from '../../journal/task-events.js';
import type { ExecutionStore } from '../types.js';
import { describeEveryStore } from './every-store.contract.js';
import { ASKED, AWKWARD_OUTCOME, newId, newToken, subject, taskInput } from './fixtures.contract.js';

describeEveryStore('task input', (t) => {
  let store: ExecutionStore;
  beforeEach(() => {
    store = t.store;
  });
  const { executionIn, kinds } = t;

  it("a task's input is recorded by its holder only, and shows in watchTask while the execution is dispatched", async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const waiting = await executionIn('awaiting_approval');
    const asked = [taskInputAskedEvent(subject(record), Object.keys(ASKED))];
    expect(await store.watchTask(record.id)).toEqual({ cancelRequestedAt: null, input: null });
    expect(await store.watchTask(newId())).toBeUndefined();
    // Not the holder, not dispatched: nothing written.
    expect(await store.setTaskInput(record.id, newToken(), ASKED, asked)).toBe(false);
    expect(await store.setTaskInput(waiting.record.id, waiting.input.claimToken, ASKED, asked)).toBe(false);
    expect(await kinds('task_input')).toEqual([]);

    const before = await store.now();
    expect(await store.setTaskInput(record.id, claim.claimToken, ASKED, asked)).toBe(true);
    const watched = await store.watchTask(record.id);
    expect(watched?.input).toEqual({ requests: ASKED, answers: {}, askedAt: expect.any(Number) });
    expect(watched!.input!.askedAt).toBeGreaterThanOrEqual(before);
    expect(await kinds('task_input')).toEqual([
      expect.objectContaining({ executionId: record.id, detail: { asked: ['confirm', 'region'] } }),
    ]);

    // Cleared by the holder; and once the execution is no longer dispatched, none shows.
    expect(await store.setTaskInput(record.id, claim.claimToken, null)).toBe(true);
    expect((await store.watchTask(record.id))?.input).toBeNull();
    await store.setTaskInput(record.id, claim.claimToken, ASKED);
    await store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'completed',
      token: claim.claimToken,
      holder: null,
      outcome: AWKWARD_OUTCOME,
    });
    expect((await store.watchTask(record.id))?.input).toBeNull();
    expect(await store.answerTaskInput(record.id, { confirm: { action: 'accept' } })).toBeUndefined();
  });

  it('answers are taken for open keys only, each once, journaled only when one is taken', async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const task = await store.openTask(taskInput(record.id));
    const answered = (keys: string[]) => [taskInputAnsweredEvent(subject(record), task.taskId, keys)];
    expect(
      await store.answerTaskInput(record.id, { confirm: { action: 'accept' } }, answered(['confirm'])),
    ).toBe(undefined);
    await store.setTaskInput(record.id, claim.claimToken, ASKED);

    const first = await store.answerTaskInput(
      record.id,
      { confirm: { action: 'accept' }, unasked: { action: 'accept' }, region: 'not an object' },
      answered(['confirm']),
    );
    expect(first?.answers).toEqual({ confirm: { action: 'accept' } });
    // Answered already: the first answer stands, and nothing is journaled.
    const again = await store.answerTaskInput(
      record.id,
      { confirm: { action: 'decline' } },
      answered(['confirm']),
    );
    expect(again?.answers).toEqual({ confirm: { action: 'accept' } });
    const last = await store.answerTaskInput(
      record.id,
      { region: { action: 'accept', content: { region: 'eu-west-1 "quoted" \\ 🧾' } } },
      answered(['region']),
    );
    expect(last?.answers).toEqual({
      confirm: { action: 'accept' },
      region: { action: 'accept', content: { region: 'eu-west-1 "quoted" \\ 🧾' } },
    });
    expect((await store.watchTask(record.id))?.input).toEqual(last);
    expect((await kinds('task_input')).map((e) => e.detail)).toEqual([
      { taskId: task.taskId, answered: ['confirm'] },
      { taskId: task.taskId, answered: ['region'] },
    ]);
  });

  it('concurrent answers to different keys all land, and of concurrent answers to one key exactly one', async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const requests = Object.fromEntries(
      Array.from({ length: 8 }, (_, i) => [`k${i}`, { method: 'elicitation/create' }]),
    );
    await store.setTaskInput(record.id, claim.claimToken, requests);
    await Promise.all(
      Object.keys(requests).map((key, i) =>
        store.answerTaskInput(record.id, { [key]: { action: 'accept', n: i } }, [
          { kind: 'task_input', executionId: record.id, detail: { answered: [key] } },
        ]),
      ),
    );
    const all = (await store.watchTask(record.id))?.input;
    expect(Object.keys(all?.answers ?? {}).sort()).toEqual(Object.keys(requests).sort());
    expect(await kinds('task_input')).toHaveLength(8);

    const other = await executionIn('dispatched');
    await store.setTaskInput(other.record.id, other.input.claimToken, {
      only: { method: 'elicitation/create' },
    });
    const racers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        store.answerTaskInput(other.record.id, { only: { action: 'accept', by: i } }, [
          { kind: 'task_input', executionId: other.record.id, detail: { answered: ['only'], by: i } },
        ]),
      ),
    );
    const kept = (await store.watchTask(other.record.id))?.input?.answers.only as { by: number };
    for (const seen of racers) expect(seen?.answers.only).toEqual(kept);
    const journaled = (await kinds('task_input')).filter((e) => e.executionId === other.record.id);
    expect(journaled.map((e) => e.detail.by)).toEqual([kept.by]);
  });

  it('requests added by the holder join the open input, keeping what was asked and answered; anyone else adds nothing', async () => {
    const { input: claim, record } = await executionIn('dispatched');
    const later = { third: { method: 'sampling/createMessage', params: { maxTokens: 5 } } };
    expect(await store.addTaskInput(record.id, newToken(), ASKED)).toBe(false);
    expect((await store.watchTask(record.id))?.input).toBeNull();
    // None open: added, it opens it.
    expect(
      await store.addTaskInput(record.id, claim.claimToken, ASKED, [
        taskInputAskedEvent(subject(record), Object.keys(ASKED)),
      ]),
    ).toBe(true);
    const opened = (await store.watchTask(record.id))?.input;
    expect(opened).toEqual({ requests: ASKED, answers: {}, askedAt: expect.any(Number) });
    await store.answerTaskInput(record.id, { confirm: { action: 'accept' } });
    // A key asked already keeps its request and its answer; a new one joins.
    expect(
      await store.addTaskInput(record.id, claim.claimToken, {
        ...later,
        confirm: { method: 'elicitation/create', params: { message: 'replaced?' } },
      }),
    ).toBe(true);
    expect((await store.watchTask(record.id))?.input).toEqual({
      requests: { ...ASKED, ...later },
      answers: { confirm: { action: 'accept' } },
      askedAt: opened?.askedAt,
    });
    expect((await kinds('task_input')).filter((e) => e.executionId === record.id)).toHaveLength(1);
    // Concurrent answers and additions: every answer stays taken, every request asked.
    const more = Array.from({ length: 6 }, (_, i) => `more${i}`);
    await Promise.all([
      ...more.map((key) =>
        store.addTaskInput(record.id, claim.claimToken, { [key]: { method: 'elicitation/create' } }),
      ),
      store.answerTaskInput(record.id, { region: { action: 'decline' } }),
      store.answerTaskInput(record.id, { third: { role: 'assistant' } }),
    ]);
    const all = (await store.watchTask(record.id))?.input;
    expect(Object.keys(all?.requests ?? {}).sort()).toEqual(['confirm', 'region', 'third', ...more].sort());
    expect(all?.answers).toEqual({
      confirm: { action: 'accept' },
      region: { action: 'decline' },
      third: { role: 'assistant' },
    });
    await store.transition({
      id: record.id,
      from: ['dispatched'],
      to: 'unknown',
      token: claim.claimToken,
    });
    expect(await store.addTaskInput(record.id, claim.claimToken, later)).toBe(false);
  });
});
