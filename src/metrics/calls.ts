import { IDEM_CODES, type IdemCode } from '../errors.js';
import { idemCodeOf, META } from '../executions/answers.js';
import type { Dispatch } from '../executions/call.js';
import type { CallObserver } from '../executions/observer.js';
import type { ToolResult } from '../store/outcome.js';
import type { CallAnswer, IdemMetrics } from './metrics.js';
import { spanForStep, traceCall } from './tracing.js';

const ANSWER_OF_CODE: Record<IdemCode, CallAnswer> = {
  [IDEM_CODES.IDEM_IN_FLIGHT]: 'in_flight',
  [IDEM_CODES.IDEM_OUTCOME_UNKNOWN]: 'unknown',
  [IDEM_CODES.IDEM_REVIEW_REQUIRED]: 'review',
  [IDEM_CODES.IDEM_AWAITING_APPROVAL]: 'awaiting_approval',
  [IDEM_CODES.IDEM_APPROVED]: 'approved',
  [IDEM_CODES.IDEM_DENIED]: 'denied',
  [IDEM_CODES.IDEM_RECEIPTS_FULL]: 'not_executed',
  [IDEM_CODES.IDEM_NOT_EXECUTED]: 'not_executed',
  [IDEM_CODES.IDEM_INVALID_INPUT]: 'refused',
  [IDEM_CODES.IDEM_KEY_CONFLICT]: 'refused',
  [IDEM_CODES.IDEM_UNKNOWN_EXECUTION]: 'refused',
  [IDEM_CODES.IDEM_INSUFFICIENT_SCOPE]: 'refused',
  [IDEM_CODES.MCP_REQUEST_ID_REUSED]: 'refused',
  [IDEM_CODES.IDEM_SESSIONS_FULL]: 'refused',
};

/** How a result answered its call: an Idem code, a replay, or the action's own result. */
export function answerOf(result: ToolResult): CallAnswer {
  const code = idemCodeOf(result);
  if (code) return ANSWER_OF_CODE[code];
  return result._meta?.[META.replayed] === true ? 'replayed' : 'executed';
}

/**
 * The observer of a gateway: the call is traced, its dispatch is a step of the
 * trace, and its answer is counted once, by kind.
 */
export function metricsObserver(metrics: IdemMetrics): CallObserver {
  return {
    async observe(call, dispatch, run) {
      const traced: Dispatch = async (ctx) => {
        const span = spanForStep('dispatch', ctx.executionId);
        try {
          return await dispatch(ctx);
        } catch (error) {
          span?.recordFailure(error);
          throw error;
        } finally {
          span?.end();
        }
      };
      return traceCall(
        call.tool,
        async () => {
          const result = await run(traced);
          metrics.calls.inc({ answer: answerOf(result), tool: call.tool });
          return result;
        },
        (result) => {
          const ref = result._meta?.[META.executionId];
          return { answer: answerOf(result), executionId: typeof ref === 'string' ? ref : undefined };
        },
      );
    },
  };
}
