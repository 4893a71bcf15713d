import type { TaskView } from '../protocol/tasks.js';

/**
 * Who hears that a task may read differently now (docs/tasks.md, "Status notifications"). The
 * engine's steps say so, by execution id, whenever this process changes what a task's view is
 * made of: an outcome recorded, a cancel, input asked for or answered, an approval decided, an
 * operator's resolution. A watcher is told the task's view as it then reads (`tasks/get`'s), one
 * read at a time and in order, so a quick working → input_required → working is never heard
 * backwards. A change made by another process of the fleet is not seen here.
 */
export class TaskChanges {
  /** Watchers by execution id. */
  readonly #watchers = new Map<string, Set<TaskWatcher>>();

  /** How many watchers there are now (a bound on what waits: tests and the operator can read it). */
  get watching(): number {
    let count = 0;
    for (const set of this.#watchers.values()) count += set.size;
    return count;
  }

  /** Adds a watcher of execution `executionId`; the returned function removes it. */
  add(executionId: string, watcher: TaskWatcher): () => void {
    let set = this.#watchers.get(executionId);
    if (!set) {
      set = new Set();
      this.#watchers.set(executionId, set);
    }
    set.add(watcher);
    return () => {
      const current = this.#watchers.get(executionId);
      current?.delete(watcher);
      if (current?.size === 0) this.#watchers.delete(executionId);
    };
  }

  /** Something of execution `executionId` changed in this process: its watchers read it again. */
  changed(executionId: string): void {
    for (const watcher of this.#watchers.get(executionId) ?? []) watcher.reread();
  }
}

/** One watcher of one task: each change queues one read of the view, after the one before. */
export class TaskWatcher {
  #reading: Promise<void> = Promise.resolve();
  readonly #read: () => Promise<TaskView | undefined>;
  readonly #heard: (view: TaskView) => void;
  readonly #failed: (error: unknown) => void;

  constructor(
    read: () => Promise<TaskView | undefined>,
    heard: (view: TaskView) => void,
    failed: (error: unknown) => void,
  ) {
    this.#read = read;
    this.#heard = heard;
    this.#failed = failed;
  }

  reread(): void {
    // Every read settles: a store that fails now is logged, and the next change reads again.
    this.#reading = this.#reading.then(async () => {
      try {
        const view = await this.#read();
        if (view) this.#heard(view);
      } catch (error) {
        this.#failed(error);
      }
    });
  }
}
