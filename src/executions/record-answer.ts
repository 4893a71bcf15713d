import { IDEM_CODES } from '../errors.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer, markReplayed } from './answers.js';
import type { ToolCall } from './call.js';
import { callEvent, journal, type StepContext } from './step-context.js';

/** What a caller attached to `record` sees, per its state: the sequence's last step (sequence.ts). */
export async function answerFor(
  ctx: StepContext,
  record: ExecutionRecord,
  events: ActivityEventInput[] = [],
  /** What the dispatch said about an outcome it could not learn (e.g. "no answer within 2 s"). */
  detail?: string,
): Promise<ToolResult> {
  await journal(ctx, events);
  return answerOfRecord(ctx, record, true, detail);
}

/**
 * The answer a record's state gives (a stored result marked as a replay, or an
 * IDEM_* answer); with `deliver`, handing over a stored result is recorded as
 * its delivery. The status tool answers with it too.
 */
export async function answerOfRecord(
  ctx: StepContext,
  record: ExecutionRecord,
  deliver = false,
  detail?: string,
): Promise<ToolResult> {
  const about = {
    ref: record.id,
    state: record.state,
    statusTool: ctx.statusTool,
    ...(detail ? { detail } : {}),
  };
  switch (record.state) {
    case 'completed':
    case 'failed': {
      if (!record.outcome) return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, about);
      if (deliver && record.deliveredAt === null) await delivered(ctx, record.id);
      return markReplayed(record.outcome.result, {
        ref: record.id,
        executedAt: record.dispatchedAt ?? record.createdAt,
        now: record.readAt,
        statusTool: ctx.statusTool,
      });
    }
    case 'authorized':
      // Approved by a human, and nobody has taken it yet: the caller's next call dispatches it.
      if (record.leaseOwner === null) return idemAnswer(IDEM_CODES.IDEM_APPROVED, about);
      return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, about);
    case 'accepted':
    case 'dispatched':
      return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, about);
    case 'awaiting_approval':
      return idemAnswer(IDEM_CODES.IDEM_AWAITING_APPROVAL, about);
    case 'denied':
      return idemAnswer(IDEM_CODES.IDEM_DENIED, {
        ...about,
        ...(record.note ? { detail: `Reason: ${record.note}` } : {}),
      });
    case 'unknown':
      return idemAnswer(
        record.replay === 'review' ? IDEM_CODES.IDEM_REVIEW_REQUIRED : IDEM_CODES.IDEM_OUTCOME_UNKNOWN,
        about,
      );
  }
}

/** Records that a stored result was handed to a caller (best effort: the answer is not held up). */
export async function delivered(ctx: StepContext, id: string, call?: ToolCall): Promise<void> {
  try {
    await ctx.store.markDelivered(id, [
      call ? callEvent('delivered', call, id) : { kind: 'delivered', executionId: id },
    ]);
  } catch (error) {
    ctx.logger.warn('delivery could not be recorded', { ref: id, error: String(error) });
  }
}
