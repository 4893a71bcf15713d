import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Check,
  type ConformanceRun,
  compareRuns,
  evaluate,
  KNOWN_NON_SUCCESS,
  passingChecks,
  type RunningServer,
  runConformance,
  startFixture,
} from './conformance/harness.js';
import { probeResumability } from './conformance/resumability.js';

describe('MCP conformance suite against the fixture server (Streamable HTTP, directly)', () => {
  let fixture: RunningServer;
  let all: ConformanceRun;

  beforeAll(async () => {
    fixture = await startFixture();
    // Every scenario, pending ones included: about 3 s on two cores.
    all = await runConformance({ url: fixture.url, suite: 'all' });
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('passes every check of every active scenario', async () => {
    const pending = new Set(['json-schema-2020-12', 'server-sse-polling']);
    const active = all.scenarios.filter((s) => !pending.has(s.scenario));
    expect(active.length).toBeGreaterThanOrEqual(30);
    const problems = active.flatMap(({ scenario, checks }) =>
      checks
        .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
        .map((c) => `${scenario}/${c.id}`),
    );
    expect(problems).toEqual([]);
    expect(active.every((s) => s.passed > 0)).toBe(true);
  });

  it('has exactly the documented non-successes in the pending scenarios', () => {
    expect(evaluate(all)).toEqual({ ok: true, unexpected: [], stale: [] });
    expect(passingChecks(all)).toContain('json-schema-2020-12/json-schema-2020-12-$defs');
  });

  it('runs the active suite on its own, as `npm run conformance` does', async () => {
    const active = await runConformance({ url: fixture.url });
    expect(active.suite).toBe('active');
    expect(active.failed).toBe(0);
    expect(active.warnings).toBe(0);
    expect(active.scenarios.map((s) => s.scenario)).not.toContain('server-sse-polling');
    expect(compareRuns(all, active).gained).toEqual([]);
  });

  it('closes an SSE stream mid-call and resumes it with Last-Event-ID under 2025-11-25', async () => {
    const report = await probeResumability(fixture.url);
    expect(report).toMatchObject({ primed: true, retryMs: 500, closedBeforeResult: true, resumed: true });
    expect(report.result).toMatchObject({ content: [{ type: 'text', text: 'Reconnection test completed' }] });
  });
});

describe('conformance harness bookkeeping', () => {
  const check = (id: string, status: Check['status']): Check => ({ id, name: id, description: id, status });
  const run = (scenarios: Record<string, Check[]>): ConformanceRun => ({
    url: 'http://127.0.0.1:1/mcp',
    suite: 'all',
    scenarios: Object.entries(scenarios).map(([scenario, checks]) => ({
      scenario,
      checks,
      passed: checks.filter((c) => c.status === 'SUCCESS').length,
      failed: checks.filter((c) => c.status === 'FAILURE').length,
      warnings: checks.filter((c) => c.status === 'WARNING').length,
    })),
    passed: 0,
    failed: 0,
    warnings: 0,
    durationMs: 0,
    exitCode: 0,
    log: '',
  });

  it('reports an unknown failure or warning, and a known one that no longer happens', () => {
    const result = evaluate(
      run({
        ping: [check('ping', 'FAILURE')],
        'tools-list': [check('tools-list', 'WARNING')],
        'server-sse-polling': [
          check('server-sse-priming-event', 'SUCCESS'),
          check('server-sse-retry-field', 'WARNING'),
        ],
      }),
    );
    expect(result.ok).toBe(false);
    expect(result.unexpected).toEqual([
      'ping/ping: FAILURE ping',
      'tools-list/tools-list: WARNING tools-list',
    ]);
    expect(result.stale).toEqual([expect.stringContaining('server-sse-polling/server-sse-priming-event')]);
    expect(KNOWN_NON_SUCCESS.every((k) => k.reason.length > 0)).toBe(true);
  });

  it('lists the checks that passed directly but not through a proxy', () => {
    const direct = run({ ping: [check('ping', 'SUCCESS')], 'tools-list': [check('tools-list', 'SUCCESS')] });
    const via = run({ ping: [check('ping', 'FAILURE')], 'tools-list': [check('tools-list', 'SUCCESS')] });
    expect(compareRuns(direct, via)).toEqual({ lost: ['ping/ping'], gained: [] });
  });
});
