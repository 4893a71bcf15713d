import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { spanForStep, traceCall } from './tracing.js';

const describeAnswer = () => ({ answer: 'executed', executionId: undefined });

describe('traceCall carries a call context only while spans record', () => {
  afterEach(() => trace.disable());

  it('no SDK registered: the call runs as it is, with no context for its steps (no AsyncLocalStorage)', async () => {
    trace.disable();
    const step = await traceCall('t', async () => spanForStep('claim', 'x'), describeAnswer);
    expect(step).toBeUndefined();
  });

  it('an SDK registered: the steps find their call and record under it', async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const step = await traceCall('t', async () => spanForStep('claim', 'x'), describeAnswer);
    expect(step).toBeDefined();
    step?.end();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['idem.call', 'idem.claim']);
  });
});
