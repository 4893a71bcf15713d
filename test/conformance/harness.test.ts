import { describe, expect, it } from 'vitest';
import { type Check, type ConformanceRun, compareRuns, evaluate, KNOWN_NON_SUCCESS } from './harness.js';

/**
 * The harness's own bookkeeping, on made-up runs: what counts as an unexpected
 * result, and which checks a proxy lost. The conformance suite itself runs in
 * test/gateway/conformance.test.ts, directly and through the gateway.
 */
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
