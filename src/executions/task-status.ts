import type { TaskView } from '../protocol/tasks.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord, TaskRecord } from '../store/types.js';
import { META } from './answers.js';
import { FINISHED } from './states.js';

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
  const finished = FINISHED.includes(record.state);
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
      // The upstream's own task id stays Idem's to follow (journaled for operators): never a client's to see.
      return record.upstreamTask
        ? `Sent; running as a task of the upstream "${record.upstreamTask.upstream}", which Idem follows to its end.`
        : 'Sent; waiting for the target to answer.';
    case 'unknown':
      return `${answeredWith(record)}${whatUnknownNeeds(record, statusTool)}`;
    default:
      return `In state ${record.state}.`;
  }
}

/**
 * An unknown execution whose target answered with a JSON-RPC error after it took the call (kept
 * with the outcome): the task says what the target said, and stays working — the effect may have
 * happened, and a `failed` task would invite a retry (docs/tasks.md).
 */
function answeredWith(record: ExecutionRecord): string {
  const error = record.outcome?.result._meta?.[META.jsonrpcError] as
    | { code?: unknown; message?: unknown }
    | undefined;
  if (!error) return '';
  return `The target answered with JSON-RPC error ${String(error.code)} (${String(error.message)}) after it took the call. `;
}

/** What an unknown outcome waits for, by the tool's replay class. */
function whatUnknownNeeds(record: ExecutionRecord, statusTool: string): string {
  if (record.replay === 'review')
    return `Whether it took effect is not known: an operator must review it (idem executions resolve ${record.id} completed|failed). It will not be sent again.`;
  if (record.replay === 'status')
    return `Whether it took effect is not known: the target is being asked (status probe); ${statusTool} tells when it is known.`;
  return `Whether it took effect is not known: calling it again re-sends it under the same key (${record.id}), which the target deduplicates.`;
}
