import type { ResolvedContract } from '../contracts/contract.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ExecutionRecord } from '../store/types.js';
import type { Dispatch, ToolCall } from './call.js';
import { type Attempt, callEvent, type EngineCore, RETRY } from './core.js';
import { answerFor } from './describe.js';
import { runDispatch } from './dispatch.js';
import { newToken } from './ids.js';

/** Dispatched, but the holder is gone: the outcome is unknown — never silently "not started". */
export async function expire(
  core: EngineCore,
  record: ExecutionRecord,
  extra: ActivityEventInput[] = [],
): Promise<ExecutionRecord | undefined> {
  return core.store.transition({
    id: record.id,
    from: ['dispatched'],
    to: 'unknown',
    requireStale: true,
    events: [
      ...extra,
      {
        kind: 'lease_expired',
        executionId: record.id,
        actor: record.actor,
        tool: record.tool,
        detail: { state: 'unknown' },
      },
    ],
  });
}

/** Unknown outcome: probe if the contract can, re-send with the same key only for `keyed`. */
export async function recover(
  core: EngineCore,
  record: ExecutionRecord,
  call: ToolCall,
  dispatch: Dispatch,
): Promise<Attempt> {
  const probed = await probe(core, record, call.contract);
  if (probed) return answerFor(core, probed);
  if (call.contract.replay === 'keyed') {
    const token = newToken();
    const again = await core.store.transition({
      id: record.id,
      from: ['unknown'],
      to: 'dispatched',
      holder: { token, owner: core.owner, leaseMs: call.contract.leaseMs },
      dispatchTimeoutMs: call.contract.timeoutMs,
      events: [callEvent('dispatched', call, record.id, { redispatch: true })],
    });
    return again ? runDispatch(core, again, token, call, dispatch, true) : RETRY;
  }
  return answerFor(core, record);
}

/** Asks the target what happened, if the tool has a status probe; records a definite answer. */
export async function probe(
  core: EngineCore,
  record: ExecutionRecord,
  contract?: ResolvedContract,
): Promise<ExecutionRecord | undefined> {
  const probe = contract?.statusProbe ?? core.contracts.get(record.tool)?.statusProbe;
  if (!probe) return undefined;
  let answer: Awaited<ReturnType<typeof probe>>;
  try {
    answer = await probe({ executionId: record.id, tool: record.tool });
  } catch (error) {
    core.logger.warn('status probe failed', { ref: record.id, error: String(error) });
    return undefined;
  }
  if (answer.outcome === 'unknown') return undefined;
  return core.store.transition({
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
}
