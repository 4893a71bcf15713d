import { addedRequests, takeAnswers } from '../tasks.js';
import type { OpenTaskInput, TaskInput, TaskInputRequest, TaskRecord, TaskWatch } from '../types.js';

/**
 * The memory store's task rows: by task id, and by execution then actor (one row per
 * pair), so an execution's trim finds its tasks without a scan. The store checks the
 * execution, journals and reads its clock; this holds the rows.
 */
export class MemoryTasks {
  readonly #byId = new Map<string, TaskRecord>();
  /** executionId → actor → taskId. */
  readonly #byExecution = new Map<string, Map<string, string>>();

  /** The pair's task, created at `now` unless it exists: `created` says which. */
  open(input: OpenTaskInput, now: number): { task: TaskRecord; created: boolean } {
    const existing = this.find(input.executionId, input.actor);
    if (existing) return { task: existing, created: false };
    if (this.#byId.has(input.taskId)) throw new Error(`task id ${input.taskId} is taken`);
    const task: TaskRecord = {
      taskId: input.taskId,
      executionId: input.executionId,
      actor: input.actor,
      generation: input.generation,
      createdAt: now,
      ttlMs: input.ttlMs,
      pollIntervalMs: input.pollIntervalMs,
      cancelRequestedAt: null,
    };
    this.#byId.set(task.taskId, task);
    let actors = this.#byExecution.get(task.executionId);
    if (!actors) {
      actors = new Map();
      this.#byExecution.set(task.executionId, actors);
    }
    actors.set(task.actor, task.taskId);
    return { task: { ...task }, created: true };
  }

  get(taskId: string): TaskRecord | undefined {
    const task = this.#byId.get(taskId);
    return task && { ...task };
  }

  find(executionId: string, actor: string): TaskRecord | undefined {
    const taskId = this.#byExecution.get(executionId)?.get(actor);
    return taskId === undefined ? undefined : this.get(taskId);
  }

  list(actor: string, page: { after?: string; limit: number }): TaskRecord[] {
    const after = page.after;
    return [...this.#byId.values()]
      .filter((task) => task.actor === actor && (after === undefined || task.taskId > after))
      .sort((a, b) => (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0))
      .slice(0, page.limit)
      .map((task) => ({ ...task }));
  }

  /** Sets the cancel's time once: `changed` is false when it was set already (or there is no such task). */
  requestCancel(taskId: string, now: number): { task: TaskRecord | undefined; changed: boolean } {
    const task = this.#byId.get(taskId);
    if (!task || task.cancelRequestedAt !== null) return { task: task && { ...task }, changed: false };
    task.cancelRequestedAt = now;
    return { task: { ...task }, changed: true };
  }

  /** The open input of an execution's task (ExecutionStore.setTaskInput), by execution id. */
  readonly #inputs = new Map<string, TaskInput>();

  /** The holder's request (answers start empty), or none (null); the store checks the holder. */
  setInput(executionId: string, requests: Record<string, TaskInputRequest> | null, now: number): void {
    if (requests === null) this.#inputs.delete(executionId);
    else this.#inputs.set(executionId, { requests: structuredClone(requests), answers: {}, askedAt: now });
  }

  /** The holder's further requests, by the one rule (addedRequests); the store checks the holder. */
  addInput(executionId: string, requests: Record<string, TaskInputRequest>, now: number): void {
    const open = this.#inputs.get(executionId) ?? null;
    this.#inputs.set(executionId, addedRequests(open, structuredClone(requests), now));
  }

  /** Answers taken by the one rule (takeAnswers); undefined while none is open (or not `dispatched`). */
  answer(
    executionId: string,
    offered: Record<string, unknown>,
    dispatched: boolean,
  ): { input: TaskInput; taken: string[] } | undefined {
    const open = dispatched ? this.#inputs.get(executionId) : undefined;
    if (!open) return undefined;
    const { input, taken } = takeAnswers(open, structuredClone(offered));
    if (taken.length > 0) this.#inputs.set(executionId, input);
    return { input: structuredClone(input), taken };
  }

  /** What a task's holder watches for (ExecutionStore.watchTask); its input only while `dispatched`. */
  watch(executionId: string, dispatched: boolean): TaskWatch {
    const input = dispatched ? this.#inputs.get(executionId) : undefined;
    return {
      cancelRequestedAt: this.cancelRequestedAt(executionId),
      input: input ? structuredClone(input) : null,
    };
  }

  /** The first cancel of any of the execution's tasks, or null. */
  cancelRequestedAt(executionId: string): number | null {
    let first: number | null = null;
    for (const taskId of this.#byExecution.get(executionId)?.values() ?? []) {
      const at = this.#byId.get(taskId)?.cancelRequestedAt ?? null;
      if (at !== null && (first === null || at < first)) first = at;
    }
    return first;
  }

  /** With its execution, in the sweep's trim. */
  deleteFor(executionId: string): void {
    this.#inputs.delete(executionId);
    for (const taskId of this.#byExecution.get(executionId)?.values() ?? []) this.#byId.delete(taskId);
    this.#byExecution.delete(executionId);
  }
}
