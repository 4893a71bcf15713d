import { IDEM_CODES } from '../errors.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer, markReplayed } from './answers.js';
import type { ToolCall } from './call.js';
import { callEvent, type EngineCore, journal } from './core.js';
import type { ToolResult } from './outcome.js';

/** What a caller attached to `record` sees, per its state. */
export async function answerFor(
  core: EngineCore,
  record: ExecutionRecord,
  events: ActivityEventInput[] = [],
  /** What the dispatch said about an outcome it could not learn (e.g. "no answer within 2 s"). */
  detail?: string,
): Promise<ToolResult> {
  await journal(core, events);
  return describe(core, record, true, detail);
}

export async function describe(
  core: EngineCore,
  record: ExecutionRecord,
  deliver = false,
  detail?: string,
): Promise<ToolResult> {
  const ctx = {
    ref: record.id,
    state: record.state,
    statusTool: core.statusTool,
    ...(detail ? { detail } : {}),
  };
  switch (record.state) {
    case 'completed':
    case 'failed': {
      if (!record.outcome) return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, ctx);
      if (deliver && record.deliveredAt === null) await delivered(core, record.id);
      return markReplayed(record.outcome.result, {
        ref: record.id,
        executedAt: record.dispatchedAt ?? record.createdAt,
        now: record.readAt,
        statusTool: core.statusTool,
      });
    }
    case 'authorized':
      // Approved by a human, and nobody has taken it yet: the caller's next call dispatches it.
      if (record.leaseOwner === null) return idemAnswer(IDEM_CODES.IDEM_APPROVED, ctx);
      return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, ctx);
    case 'accepted':
    case 'dispatched':
      return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, ctx);
    case 'awaiting_approval':
      return idemAnswer(IDEM_CODES.IDEM_AWAITING_APPROVAL, ctx);
    case 'denied':
      return idemAnswer(IDEM_CODES.IDEM_DENIED, {
        ...ctx,
        ...(record.note ? { detail: `Reason: ${record.note}` } : {}),
      });
    case 'unknown':
      return idemAnswer(
        record.replay === 'review' ? IDEM_CODES.IDEM_REVIEW_REQUIRED : IDEM_CODES.IDEM_OUTCOME_UNKNOWN,
        ctx,
      );
  }
}

export async function delivered(core: EngineCore, id: string, call?: ToolCall): Promise<void> {
  try {
    await core.store.markDelivered(id, [
      call ? callEvent('delivered', call, id) : { kind: 'delivered', executionId: id },
    ]);
  } catch (error) {
    core.logger.warn('delivery could not be recorded', { ref: id, error: String(error) });
  }
}
