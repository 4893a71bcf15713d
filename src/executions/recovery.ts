import type { ResolvedContract } from '../contracts/contract.js';
import type { ActivityEventInput } from '../journal/events.js';
import { leaseExpiredEvent } from '../store/lease.js';
import type { ExecutionRecord } from '../store/types.js';
import type { ToolCall } from './call.js';
import { newToken } from './ids.js';
import { callEvent, journal, type Next, type StepContext } from './step-context.js';

/** Dispatched, but the holder is gone: the outcome is unknown — never silently "not started". */
export async function expire(
  ctx: StepContext,
  record: ExecutionRecord,
  extra: ActivityEventInput[] = [],
): Promise<ExecutionRecord | undefined> {
  return ctx.store.transition({
    id: record.id,
    from: ['dispatched'],
    to: 'unknown',
    requireStale: true,
    events: [...extra, leaseExpiredEvent(record)],
  });
}

/** The sequence's step for a dispatched execution whose holder's lease lapsed: unknown, then recovered. */
export async function expireLease(
  ctx: StepContext,
  record: ExecutionRecord,
  events: ActivityEventInput[],
): Promise<Next> {
  const expired = await expire(ctx, record, events);
  return expired ? { step: 'recover', record: expired, events: [] } : { step: 'retry' };
}

/** Unknown outcome: probe if the contract can, re-send with the same key only for `keyed`. */
export async function recover(
  ctx: StepContext,
  record: ExecutionRecord,
  call: ToolCall,
  events: ActivityEventInput[],
): Promise<Next> {
  await journal(ctx, events);
  const probed = await probe(ctx, record, call.contract);
  if (probed) return { step: 'answer', record: probed };
  if (call.contract.replay === 'keyed') {
    const token = newToken();
    const again = await ctx.store.transition({
      id: record.id,
      from: ['unknown'],
      to: 'dispatched',
      holder: { token, owner: ctx.owner, leaseMs: call.contract.leaseMs },
      dispatchTimeoutMs: call.contract.timeoutMs,
      events: [callEvent('dispatched', call, record.id, { redispatch: true })],
    });
    return again ? { step: 'dispatch', record: again, token, redispatch: true } : { step: 'retry' };
  }
  return { step: 'answer', record };
}

/** Asks the target what happened, if the tool has a status probe; records a definite answer. */
export async function probe(
  ctx: StepContext,
  record: ExecutionRecord,
  contract?: ResolvedContract,
): Promise<ExecutionRecord | undefined> {
  const probe = contract?.statusProbe ?? ctx.contracts.get(record.tool)?.statusProbe;
  if (!probe) return undefined;
  let answer: Awaited<ReturnType<typeof probe>>;
  try {
    answer = await probe({ executionId: record.id, tool: record.tool });
  } catch (error) {
    ctx.logger.warn('status probe failed', { ref: record.id, error: String(error) });
    return undefined;
  }
  if (answer.outcome === 'unknown') return undefined;
  const resolved = await ctx.store.transition({
    id: record.id,
    from: ['unknown'],
    to: answer.outcome,
    holder: null,
    outcome: { result: answer.result },
    events: [
      {
        kind: 'outcome',
        executionId: record.id,
        tool: record.tool,
        detail: { state: answer.outcome, by: 'status_probe' },
      },
    ],
  });
  if (resolved) ctx.taskChanges.changed(record.id);
  return resolved;
}
