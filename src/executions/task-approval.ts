import { decideApproval } from '../approval/decide.js';
import {
  approvalElicitation,
  decisionOfElicitation,
  elicitationAllowed,
} from '../approval/elicitation-form.js';
import { approvalView } from '../approval/view.js';
import type { ExecutionRecord, TaskRecord } from '../store/types.js';
import type { StepContext } from './step-context.js';

/**
 * Approval as a task's input (docs/tasks.md, "Approval"): a 2026-07-28 task whose execution
 * awaits approval, of a tool whose contract lets the client's human decide, is `input_required`
 * with one input request, an `elicitation/create` form under APPROVAL_INPUT_KEY. The client's
 * `tasks/update` answering it is decided in the store (decideApproval), so any gateway of a
 * fleet can take it; the process that holds the call (approved-task.ts) then dispatches it.
 */

/** The input request's key: stable, Idem's own, never one a target could ask under. */
export const APPROVAL_INPUT_KEY = 'io.idem/approval';

type InputRequests = ReadonlyMap<string, { method: string; params?: unknown }>;

/**
 * The approval asked of the task's client, or undefined: not awaiting approval, a 2025-11-25
 * task (its status stays `working`, docs/tasks.md), a contract that says `elicitation: never`
 * or that this process does not know (fail closed: only an operator decides).
 */
export async function approvalInput(
  ctx: StepContext,
  record: ExecutionRecord,
  task: TaskRecord,
): Promise<InputRequests | undefined> {
  if (record.state !== 'awaiting_approval' || task.generation !== 'v2') return undefined;
  if (!elicitationAllowed(ctx.contracts.get(record.tool))) return undefined;
  const request = await ctx.store.getApproval(record.id);
  if (!request || request.decision !== null) return undefined;
  const params = approvalElicitation(approvalView(record, request));
  return new Map([[APPROVAL_INPUT_KEY, { method: 'elicitation/create', params }]]);
}

/**
 * `tasks/update` answering the approval: `accept` approves and `decline` denies, by the task's
 * actor via elicitation (with the reason the form carried); `cancel` or anything else leaves it
 * pending. Of two deciders (another gateway, an operator, the expiry), the first stands. Ignored
 * when the approval is not asked of this task (approvalInput), as any key that is not open is.
 */
export async function answerApprovalInput(
  ctx: StepContext,
  record: ExecutionRecord,
  task: TaskRecord,
  responses: unknown,
): Promise<void> {
  if (!responses || typeof responses !== 'object') return;
  const answer = (responses as Record<string, unknown>)[APPROVAL_INPUT_KEY];
  if (answer === undefined || !(await approvalInput(ctx, record, task))) return;
  const decided = decisionOfElicitation(answer, task.actor);
  if (!decided) return;
  const { decision, ...decider } = decided;
  const result = await decideApproval(ctx.store, record.id, decision, decider);
  if (result.decided) approvalDecided(ctx, record.id);
}

/** Who in this process waits for a decision on an execution: approved-task.ts. */
const waiting = new WeakMap<StepContext, Map<string, Set<() => void>>>();

/** A decision on `executionId` was made by this process: whoever here waits for it, or watches its task, looks now. */
export function approvalDecided(ctx: StepContext, executionId: string): void {
  // Its task reads differently now: status notifications.
  ctx.taskChanges.changed(executionId);
  for (const wake of waiting.get(ctx)?.get(executionId) ?? []) wake();
}

/** Calls `wake` on each decision this process makes on `executionId`, until the returned function is called. */
export function onApprovalDecided(ctx: StepContext, executionId: string, wake: () => void): () => void {
  const byId = waiting.get(ctx) ?? new Map<string, Set<() => void>>();
  waiting.set(ctx, byId);
  const wakes = byId.get(executionId) ?? new Set();
  byId.set(executionId, wakes.add(wake));
  return () => {
    wakes.delete(wake);
    if (wakes.size === 0) byId.delete(executionId);
  };
}

/** Whether this process holds a call waiting for the decision on `executionId` (approved-task.ts). */
export function heldHere(ctx: StepContext, executionId: string): boolean {
  return waiting.get(ctx)?.has(executionId) ?? false;
}
