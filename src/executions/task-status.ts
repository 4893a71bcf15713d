import type { TaskView } from '../protocol/tasks.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord, TaskRecord } from '../store/types.js';
import { META } from './answers.js';

/**
 * What a task says, from its execution's record (docs/tasks.md, the mapping table). A task
 * reports what became of the request; the execution what became of the effect. Honesty first:
 * an execution whose outcome is not known is never a `failed` task — it stays `working`, and its
 * status message says what must happen for it to end.
 *
 * `answer` is what the execution's caller would be told now (record-answer.ts): the stored result
 * of a finished execution, or the IDEM_* answer of a refused one. The status is the 2026-07-28
 * one (a target's own failure is `completed` with `isError`); the 2025-11-25 renderer reads that
 * as `failed` (protocol/tasks.ts).
 */
export function taskView(
  record: ExecutionRecord,
  task: TaskRecord,
  answer: ToolResult | undefined,
  statusTool: string,
  /** What the target asked for and the client has not answered yet (tasks.ts, PendingInput). */
  input?: ReadonlyMap<string, { method: string; params?: unknown }>,
): TaskView {
  const base = {
    taskId: task.taskId,
    createdAt: task.createdAt,
    lastUpdatedAt: Math.max(task.createdAt, record.updatedAt, task.cancelRequestedAt ?? 0),
    ttlMs: task.ttlMs,
    pollIntervalMs: record.upstreamTask?.pollIntervalMs ?? task.pollIntervalMs,
  };
  const finished = record.state === 'completed' || record.state === 'failed' || record.state === 'denied';
  // A cancel asked before the outcome was recorded ends the task; one asked after changes nothing.
  // In the same millisecond the cancel counts: its own retirement of the execution is that fast.
  if (task.cancelRequestedAt !== null && !(finished && record.updatedAt < task.cancelRequestedAt)) {
    return {
      ...base,
      status: 'cancelled',
      statusMessage: finished
        ? `Cancelled at your request; the execution ${record.id} ended ${record.state} all the same.`
        : record.dispatchedAt === null
          ? 'Cancelled at your request before it was sent: nothing ran.'
          : `Cancelled at your request after it was sent: whether it took effect is not known (${record.id}; ${statusTool} tells when it is).`,
    };
  }
  // The target answered with a JSON-RPC error after it took the call: the request failed, and the
  // effect is still unknown (the execution says so, and waits for review).
  const answeredWith =
    record.state === 'unknown' ? record.outcome?.result._meta?.[META.jsonrpcError] : undefined;
  if (answeredWith) {
    return {
      ...base,
      status: 'failed',
      error: answeredWith as NonNullable<TaskView['error']>,
      statusMessage: `The target answered with an error; whether it acted first is not known (${record.id}: ${inFlightMessage(record, statusTool)})`,
    };
  }
  if (finished && answer) {
    const error = answer._meta?.[META.jsonrpcError] as TaskView['error'] | undefined;
    if (error) return { ...base, status: 'failed', error };
    return { ...base, status: 'completed', result: answer as Record<string, unknown> };
  }
  // Input: what the target asks before it acts, or (awaiting approval) the approval asked of the client.
  if ((record.state === 'dispatched' || record.state === 'awaiting_approval') && input && input.size > 0) {
    return {
      ...base,
      status: 'input_required',
      inputRequests: Object.fromEntries(
        [...input].map(([key, asked]) => [key, { method: asked.method, params: asked.params ?? {} }]),
      ),
      statusMessage:
        record.state === 'dispatched'
          ? 'The target asks for input before it acts: answer with tasks/update.'
          : `Waiting for approval: answer it with tasks/update (accept runs it once, decline refuses it), or an operator decides (idem approvals approve ${record.id}).`,
    };
  }
  return { ...base, status: 'working', statusMessage: inFlightMessage(record, statusTool) };
}

/** What must happen before a task that is still working ends: what a model can tell its user. */
function inFlightMessage(record: ExecutionRecord, statusTool: string): string {
  switch (record.state) {
    case 'accepted':
      return 'Accepted; about to be sent.';
    case 'authorized':
      // Sent by the gateway that holds the call (approved-task.ts) within a poll interval; one that
      // was restarted meanwhile holds it no more, and nothing else would send it.
      return 'Approved; about to be sent. If it stays so, the gateway that held the call is gone: call the tool again with the same arguments, and it runs once.';
    case 'awaiting_approval':
      return `Waiting for approval (an operator decides: idem approvals approve ${record.id}).`;
    case 'dispatched':
      return record.upstreamTask
        ? `Running as the upstream's task ${record.upstreamTask.taskId}.`
        : 'Sent; waiting for the target to answer.';
    case 'unknown':
      return record.replay === 'review'
        ? `Whether it took effect is not known: an operator must review it (idem executions resolve ${record.id} completed|failed). It will not be sent again.`
        : record.replay === 'status'
          ? `Whether it took effect is not known: the target is being asked (status probe); ${statusTool} tells when it is known.`
          : `Whether it took effect is not known: calling it again re-sends it under the same key (${record.id}), which the target deduplicates.`;
    default:
      return `In state ${record.state}.`;
  }
}
