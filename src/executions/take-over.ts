import type { ActivityEventInput } from '../journal/events.js';
import type { ExecutionRecord } from '../store/types.js';
import type { ToolCall } from './call.js';
import { newToken } from './ids.js';
import { isStale } from './leases.js';
import { callEvent, type Next, type StepContext } from './step-context.js';

/**
 * An execution nobody holds that was never dispatched — approved by a human
 * (`authorized`, no holder), or `accepted` by a claimer that is gone: this
 * call takes it over and dispatches it next, once — of any number of callers
 * in any number of processes, the one whose conditional write lands. Anything
 * else gets its answer.
 */
export async function takeOverUndispatched(
  ctx: StepContext,
  record: ExecutionRecord,
  call: ToolCall,
  events: ActivityEventInput[],
): Promise<Next> {
  const free = (record.state === 'authorized' || record.state === 'accepted') && isStale(record);
  if (!free) return { step: 'answer', record, events };
  const token = newToken();
  const taken = await ctx.store.transition({
    id: record.id,
    from: [record.state],
    to: 'dispatched',
    requireStale: true,
    holder: { token, owner: ctx.owner, leaseMs: call.contract.leaseMs },
    dispatchTimeoutMs: call.contract.timeoutMs,
    events: [...events, callEvent('dispatched', call, record.id, { resumed: true })],
  });
  return taken ? { step: 'dispatch', record: taken, token, redispatch: false } : { step: 'retry' };
}
