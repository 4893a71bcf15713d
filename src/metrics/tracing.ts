import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, Span, SpanStatusCode } from '@opentelemetry/api';
import { loadOpenTelemetryIfInstalled } from '../support/optional-packages.js';

/**
 * OpenTelemetry spans for one tool call: `idem.call` (receive) with children
 * `idem.claim`, `idem.dispatch` and `idem.outcome`, each carrying the
 * execution id. Through @opentelemetry/api alone: with no SDK registered every
 * span is a no-op, so tracing costs nothing until an operator installs one.
 *
 * The call's context is also kept in our own AsyncLocalStorage: the steps are
 * parented to their call even when no OpenTelemetry context manager is
 * registered (the API's default does not follow awaits). Only while a span
 * records: an AsyncLocalStorage in use hooks every promise of the process.
 *
 * @opentelemetry/api is an optional peer (docs/adr/0038-optional-peer-packages.md), resolved where the
 * application's own is: without it no SDK can be registered either, and no span
 * is made. Loaded when this module is, so that no caller can forget to.
 */

export const EXECUTION_ID_ATTRIBUTE = 'idem.execution_id';
const TRACER = 'idem';

const calls = new AsyncLocalStorage<Context>();
const otel = await loadOpenTelemetryIfInstalled();

/** Runs one call inside an `idem.call` span; `describe` names its answer and execution once it is known. */
export async function traceCall<T>(
  tool: string,
  run: () => Promise<T>,
  describe: (result: T) => { answer: string; executionId: string | undefined },
): Promise<T> {
  if (!otel) return run();
  const { context, trace } = otel;
  const span = trace.getTracer(TRACER).startSpan('idem.call', { attributes: { 'idem.tool': tool } });
  // No SDK registered (or this call not sampled): nothing to record, so no context to carry.
  // Carrying it anyway would turn on AsyncLocalStorage's promise hooks, which then tax every
  // promise of the process (measured: ~10 % of a gateway call's CPU).
  if (!span.isRecording()) return run();
  const callContext = trace.setSpan(context.active(), span);
  try {
    const result = await calls.run(callContext, () => context.with(callContext, run));
    const { answer, executionId } = describe(result);
    span.setAttribute('idem.answer', answer);
    if (executionId) span.setAttribute(EXECUTION_ID_ATTRIBUTE, executionId);
    return result;
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

export interface StepSpan {
  recordFailure(error: unknown): void;
  end(): void;
}

/** A step of the call running now (claim, dispatch, outcome); undefined outside a traced call (the sweeper). */
export function spanForStep(
  step: 'claim' | 'dispatch' | 'outcome',
  executionId: string | null,
): StepSpan | undefined {
  const parent = calls.getStore();
  // A parent exists only where traceCall found the API loaded.
  if (!parent || !otel) return undefined;
  const span = otel.trace
    .getTracer(TRACER)
    .startSpan(
      `idem.${step}`,
      executionId ? { attributes: { [EXECUTION_ID_ATTRIBUTE]: executionId } } : {},
      parent,
    );
  return { recordFailure: (error) => recordFailure(span, error), end: () => span.end() };
}

function recordFailure(span: Span, error: unknown): void {
  span.setStatus({
    // SpanStatusCode.ERROR by its value (2 in the API as in OTLP): the type checks that it is.
    code: 2 satisfies SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}
