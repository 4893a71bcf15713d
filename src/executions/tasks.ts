import { randomBytes } from 'node:crypto';
import { taskCancelEvent, taskCreatedEvent, taskInputAnsweredEvent } from '../journal/task-events.js';
import type { TaskView } from '../protocol/tasks.js';
import type { ToolResult } from '../store/outcome.js';
import { openKeys, takeAnswers } from '../store/tasks.js';
import type { ExecutionRecord, TaskInputRequest, TaskRecord } from '../store/types.js';
import { META, markExecuted } from './answers.js';
import type { ToolCall } from './call.js';
import { answerOfRecord, delivered } from './record-answer.js';
import { FINISHED } from './states.js';
import { current } from './status.js';
import type { StepContext } from './step-context.js';
import { answerApprovalInput, approvalDecided, approvalInput } from './task-approval.js';
import { taskView } from './task-status.js';
import { taskCancelled } from './task-watch.js';

/**
 * An execution as an MCP task (docs/tasks.md): one task per execution and actor, answered from
 * the store by any gateway, after restarts, for as long as the execution is kept (its retention
 * is the task's ttlMs). The task id is unguessable and good only for the actor it was made for:
 * every lookup compares the actor, and another actor's task is answered as one that does not exist.
 */

/** A task id: `tsk_` + 32 random bytes. Not the execution id, which is time-ordered and may be shared by actors. */
export function newTaskId(): string {
  return `tsk_${randomBytes(32).toString('base64url')}`;
}

/**
 * `tasks/update`: answers to the keys the task's target asked for, taken by the store in one
 * write (a key not open is ignored; a partial answer leaves the rest open), so that any process
 * may take them; the dispatch waiting for them (task-watch.ts) is woken here, or reads them at
 * its poll interval in another process. A task with no such input may be answering the approval
 * it asks of its client (task-approval.ts). Undefined: no such task of this actor.
 */
export async function updateTask(
  ctx: StepContext,
  taskId: string,
  actor: string,
  responses: unknown,
): Promise<TaskView | undefined> {
  const found = await ownTask(ctx, taskId, actor);
  if (!found) return undefined;
  const { record } = found;
  const open = record.state === 'dispatched' ? (await ctx.store.watchTask(record.id))?.input : undefined;
  if (open) {
    const offered = responses && typeof responses === 'object' ? (responses as Record<string, unknown>) : {};
    // The keys this answer would take as read (the store takes them again, atomically): journaled as answered.
    const keys = takeAnswers(open, offered).taken;
    if (keys.length > 0) {
      const subject = { executionId: record.id, actor, tool: record.tool };
      await ctx.store.answerTaskInput(record.id, offered, [taskInputAnsweredEvent(subject, taskId, keys)]);
      ctx.taskInputs.get(record.id)?.wake();
      ctx.taskChanges.changed(record.id);
    }
  } else await answerApprovalInput(ctx, record, found.task, responses);
  return getTask(ctx, taskId, actor, false);
}

/** What the task asks of its client now: its target's open input, or the approval it waits for. */
async function inputOf(
  ctx: StepContext,
  record: ExecutionRecord,
  task: TaskRecord,
): Promise<ReadonlyMap<string, TaskInputRequest> | undefined> {
  if (record.state !== 'dispatched') return approvalInput(ctx, record, task);
  const input = (await ctx.store.watchTask(record.id))?.input;
  return input ? new Map(openKeys(input).map((key) => [key, input.requests[key]!])) : undefined;
}

/**
 * Whether a caller attached to `record` is answered with its task: a caller that can take one,
 * of a tool that may be one, while the execution runs — or always, under `task: required`.
 */
export function answersAsTask(call: ToolCall, record: ExecutionRecord): boolean {
  if (!call.task || call.contract.task === 'off') return false;
  return !FINISHED.includes(record.state) || call.contract.task === 'required';
}

/**
 * This caller's task of `record` (made now, or the one it already has: a duplicate of an intent
 * in flight gets the same task), as an answer the front renders in the client's revision. The
 * task is in the store before this returns: `tasks/get` finds it from the first moment.
 */
export async function answerAsTask(
  ctx: StepContext,
  call: ToolCall,
  record: ExecutionRecord,
): Promise<ToolResult> {
  const generation = call.task?.generation ?? 'v2';
  const taskId = newTaskId();
  const task = await ctx.store.openTask(
    {
      taskId,
      executionId: record.id,
      actor: call.caller.actor,
      generation,
      ttlMs: ctx.tasks.ttlMs,
      pollIntervalMs: ctx.tasks.pollIntervalMs,
    },
    [
      taskCreatedEvent(
        { executionId: record.id, actor: call.caller.actor, tool: call.tool },
        { taskId, generation, ttlMs: ctx.tasks.ttlMs },
      ),
    ],
  );
  const view = taskView(
    record,
    task,
    await finishedAnswer(ctx, record, false),
    ctx.statusTool,
    await inputOf(ctx, record, task),
  );
  return taskAnswer(view, record.id);
}

/** An answer that is a task: its view travels in `_meta`, for the front to render. */
export function taskAnswer(view: TaskView, ref: string): ToolResult {
  return {
    content: [{ type: 'text', text: `Running as the task ${view.taskId} (${view.status}).` }],
    _meta: { [META.task]: view, [META.executionId]: ref },
  };
}

/** The task view carried by an answer, if it is one. */
export function taskOf(answer: ToolResult): TaskView | undefined {
  return answer._meta?.[META.task] as TaskView | undefined;
}

/** `tasks/get`: the task as it stands now (a stale dispatch turns unknown here, as for the status tool). */
export async function getTask(
  ctx: StepContext,
  taskId: string,
  actor: string,
  /** The answer hands a finished task's result to its client (2026-07-28 tasks/get, 2025-11-25 tasks/result): its delivery. */
  delivering = true,
): Promise<TaskView | undefined> {
  const found = await ownTask(ctx, taskId, actor);
  if (!found) return undefined;
  const record = await current(ctx, found.record);
  const input = await inputOf(ctx, record, found.task);
  const answer = await finishedAnswer(ctx, record, delivering);
  return taskView(record, found.task, answer, ctx.statusTool, input);
}

/** `tasks/list` (2025-11-25): this actor's tasks, a page at a time, by id. */
export async function listTasks(
  ctx: StepContext,
  actor: string,
  after: string | undefined,
  limit: number,
): Promise<{ tasks: TaskView[]; next?: string }> {
  const page = await ctx.store.listTasks(actor, { ...(after ? { after } : {}), limit: limit + 1 });
  const tasks: TaskView[] = [];
  for (const task of page.slice(0, limit)) {
    // A listing shows each task's status, not its result: it delivers nothing.
    const view = await getTask(ctx, task.taskId, actor, false);
    if (view) tasks.push(view);
  }
  const last = page[limit - 1];
  return page.length > limit && last ? { tasks, next: last.taskId } : { tasks };
}

/**
 * `tasks/cancel`: recorded first (durable, once), then acted on by what the execution is doing.
 * Waiting for approval, or approved and not yet sent: it is retired as not executed, and nothing runs. Dispatched (by
 * this process, or by another that reads the cancel from the store): the dispatch is aborted,
 * which the channel passes on to the target; the execution is
 * then `unknown` unless the target answers anyway (it is recorded as what it is). A task whose
 * outcome was recorded first keeps that outcome. Undefined: no such task for this actor.
 */
export async function cancelTask(
  ctx: StepContext,
  taskId: string,
  actor: string,
): Promise<TaskView | undefined> {
  const found = await ownTask(ctx, taskId, actor);
  if (!found) return undefined;
  const { record } = found;
  // A task whose execution has ended keeps its outcome: the cancel is acknowledged, and changes nothing.
  if (FINISHED.includes(record.state)) return getTask(ctx, taskId, actor, false);
  const before =
    record.dispatchedAt === null
      ? 'dispatch'
      : (await ctx.store.watchTask(record.id))?.input
        ? 'input'
        : 'outcome';
  await ctx.store.requestTaskCancel(taskId, [
    taskCancelEvent({ executionId: record.id, actor, tool: record.tool }, taskId, before),
  ]);
  // Approved and not yet taken over counts too: the holder waiting to send it (approved-task.ts) loses the race.
  if (record.state === 'awaiting_approval' || record.state === 'authorized') {
    await ctx.store
      .transition({
        id: record.id,
        from: ['awaiting_approval', 'authorized'],
        to: 'failed',
        release: true,
        note: 'cancelled by its task (tasks/cancel) before it was sent',
        events: [
          {
            kind: 'outcome',
            executionId: record.id,
            actor,
            tool: record.tool,
            detail: { state: 'failed', reason: 'cancelled' },
          },
        ],
      })
      .catch((error: unknown) =>
        ctx.logger.warn('a cancelled task could not be retired', { ref: record.id, error: String(error) }),
      );
    approvalDecided(ctx, record.id);
  }
  // Dispatched here (also just now, by the holder of an approval it raced): aborted now; by another
  // gateway, which reads the cancel at its poll interval (task-watch.ts).
  ctx.taskCancels.get(record.id)?.abort(taskCancelled());
  ctx.taskChanges.changed(record.id);
  return getTask(ctx, taskId, actor, false);
}

async function ownTask(
  ctx: StepContext,
  taskId: string,
  actor: string,
): Promise<{ task: TaskRecord; record: ExecutionRecord } | undefined> {
  const found = await ctx.store.getTask(taskId);
  return found && found.task.actor === actor ? found : undefined;
}

/**
 * What a finished execution's task holds: the tool's result as the target gave it (its own
 * failure included), or Idem's refusal. Undefined while it runs.
 */
async function finishedAnswer(
  ctx: StepContext,
  record: ExecutionRecord,
  deliver: boolean,
): Promise<ToolResult | undefined> {
  if (!FINISHED.includes(record.state)) return undefined;
  if (record.state === 'denied' || !record.outcome) return answerOfRecord(ctx, record, false);
  if (deliver && record.deliveredAt === null) await delivered(ctx, record.id);
  return markExecuted(ctx.knownSecrets.redact(record.outcome.result), record.id);
}
