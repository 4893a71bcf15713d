import { randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { libraryCall } from '../../test/support/engine-setup.js';
import { withFaults } from '../../test/support/faulty-store.js';
import { OutcomeUnknownError, StoreUnavailableError } from '../errors.js';
import type { ToolCall } from '../executions/call.js';
import { ExecutionEngine } from '../executions/engine.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { ExecutionStore } from '../store/types.js';
import { answerOf, metricsObserver } from './calls.js';
import { type IdemMetrics, loadMetrics } from './metrics.js';
import { measuredStore } from './store.js';
import { EXECUTION_ID_ATTRIBUTE } from './tracing.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
});
afterAll(() => {
  trace.disable();
});

function call(key: string, replay: 'status' | 'review' = 'status'): ToolCall {
  return libraryCall({ replay }, { key });
}

async function engineWith(store: ExecutionStore): Promise<{ engine: ExecutionEngine; metrics: IdemMetrics }> {
  const metrics = await loadMetrics({ receiptsInUse: () => 7, required: true });
  const engine = new ExecutionEngine({
    store: measuredStore(store, metrics),
    fingerprinter: new Fingerprinter(randomBytes(32)),
    observer: metricsObserver(metrics),
  });
  return { engine, metrics };
}

async function value(
  metrics: IdemMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = (await metrics.registry!.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, l]) => (v.labels as Record<string, unknown>)[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}

const ok = async () => ({ content: [{ type: 'text' as const, text: 'charged' }] });

describe('metrics, counted where each event happens', () => {
  it('calls by answer (executed, replayed, unknown), claims won and lost, unknown outcomes', async () => {
    const { engine, metrics } = await engineWith(new MemoryStore());
    await engine.execute(call('a'), ok);
    const replay = await engine.execute(call('a'), ok);
    expect(answerOf(replay)).toBe('replayed');
    const lost = await engine.execute(call('b'), async () => {
      throw new OutcomeUnknownError('connection lost after send');
    });
    expect(answerOf(lost)).toBe('unknown');
    expect(await value(metrics, 'idem_calls_total', { answer: 'executed' })).toBe(1);
    expect(await value(metrics, 'idem_calls_total', { answer: 'replayed' })).toBe(1);
    expect(await value(metrics, 'idem_calls_total', { answer: 'unknown' })).toBe(1);
    expect(await value(metrics, 'idem_claims_total', { result: 'won' })).toBe(2);
    expect(await value(metrics, 'idem_claims_total', { result: 'lost' })).toBe(1);
    expect(await value(metrics, 'idem_unknown_outcomes_total', { cause: 'no_answer' })).toBe(1);
    expect(await value(metrics, 'idem_receipts_in_use')).toBe(7);
  });

  it('a store that is down: answered not executed, the error counted by operation', async () => {
    const down = withFaults(new MemoryStore(), {
      claim: () => Promise.reject(new StoreUnavailableError('database is down')),
    });
    const { engine, metrics } = await engineWith(down);
    let dispatched = 0;
    const answer = await engine.execute(call('c'), async () => {
      dispatched++;
      return ok();
    });
    expect(answerOf(answer)).toBe('not_executed');
    expect(dispatched).toBe(0);
    expect(await value(metrics, 'idem_store_errors_total', { operation: 'claim' })).toBe(1);
    expect(await value(metrics, 'idem_calls_total', { answer: 'not_executed' })).toBe(1);
  });

  it('the sweeper finding an expired lease: lease expired and an unknown outcome', async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ clock: () => now });
    const { engine, metrics } = await engineWith(store);
    // A dispatch whose holder vanishes: the handler never answers before the lease and deadline pass.
    let answer: () => void = () => {};
    const held = engine.execute(
      call('d'),
      () => new Promise((resolve) => (answer = () => resolve({ content: [] }))),
    );
    await expect.poll(async () => (await store.list({ state: 'dispatched' })).length).toBe(1);
    now += 24 * 60 * 60_000;
    await engine.store.sweep({ retentionMs: 48 * 60 * 60_000 });
    expect(await value(metrics, 'idem_leases_expired_total')).toBe(1);
    expect(await value(metrics, 'idem_unknown_outcomes_total', { cause: 'lease_expired' })).toBe(1);
    answer();
    // The late answer does not rewrite the unknown outcome, nor count another one.
    await held;
    expect(await value(metrics, 'idem_unknown_outcomes_total')).toBe(1);
  });
});

describe('OpenTelemetry spans: receive → claim → dispatch → outcome', () => {
  it('one trace per call, each step a child carrying the execution id', async () => {
    exporter.reset();
    const { engine } = await engineWith(new MemoryStore());
    const result = await engine.execute(call('traced'), ok);
    const ref = result._meta?.['io.idem/execution-id'];
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'idem.call');
    expect(root?.attributes).toMatchObject({
      'idem.tool': 'charge_card',
      'idem.answer': 'executed',
      [EXECUTION_ID_ATTRIBUTE]: ref,
    });
    const rootId = root?.spanContext().spanId;
    for (const step of ['idem.claim', 'idem.dispatch', 'idem.outcome']) {
      const span = spans.find((s) => s.name === step);
      expect(span, step).toBeDefined();
      expect(span?.parentSpanContext?.spanId, step).toBe(rootId);
      expect(span?.spanContext().traceId).toBe(root?.spanContext().traceId);
      expect(span?.attributes[EXECUTION_ID_ATTRIBUTE], step).toBe(ref);
    }
    const order = ['idem.claim', 'idem.dispatch', 'idem.outcome'].map(
      (name) => spans.find((s) => s.name === name)?.startTime,
    );
    expect(order.map((t) => (t ? t[0] * 1e9 + t[1] : 0))).toEqual(
      [...order.map((t) => (t ? t[0] * 1e9 + t[1] : 0))].sort((a, b) => a - b),
    );
  });

  it('a replay has no dispatch span; the sweeper outside a call makes none', async () => {
    const { engine } = await engineWith(new MemoryStore());
    await engine.execute(call('twice'), ok);
    exporter.reset();
    await engine.execute(call('twice'), ok);
    await engine.store.sweep({ retentionMs: 1 });
    const names = exporter.getFinishedSpans().map((s) => s.name);
    expect(names).toContain('idem.call');
    expect(names).not.toContain('idem.dispatch');
    expect(names).not.toContain('idem.outcome');
  });
});
