import { describe, expect, it } from 'vitest';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';
import { journaledTaskRun } from '../../../test/support/task-run.js';
import { verifyStore } from '../../journal/verify-store.js';

describe('SqliteStore tasks', () => {
  const files = useSqliteFiles();

  it('audit verify passes on a journal with every task kind, and once the sweep trimmed the executions with their tasks', async () => {
    const store = await files.open();
    const run = await journaledTaskRun(store);
    const kinds = new Set((await store.readJournal()).map((e) => e.kind));
    expect(kinds).toEqual(
      new Set(['accepted', 'dispatched', 'task_created', 'upstream_task', 'task_cancel', 'outcome']),
    );
    const verify = () =>
      verifyStore({ kind: 'sqlite', path: files.path }, { streams: ['activity'], heads: [] });

    const before = await verify();
    expect(before.ok).toBe(true);
    expect(before.executions).toMatchObject({ ok: true, checked: 2, journaled: 2, trimmed: 0 });

    expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(2);
    for (const taskId of run.tasks) expect(await store.getTask(taskId)).toBeUndefined();
    const after = await verify();
    expect(after.ok).toBe(true);
    expect(after.executions).toMatchObject({ ok: true, checked: 0, journaled: 2, trimmed: 2 });
  });
});
