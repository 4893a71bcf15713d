import { describe, expect, it } from 'vitest';
import {
  type Check,
  type ConformanceRun,
  compareRuns,
  evaluate,
  KNOWN_NON_SUCCESS,
  KNOWN_NON_SUCCESS_BY_REVISION,
  readNotScored,
} from './harness.js';

/**
 * The harness's own bookkeeping, on made-up runs: what counts as an unexpected
 * result, and which checks a proxy lost. The conformance suite itself runs in
 * test/gateway/conformance.test.ts, directly and through the gateway.
 */
describe('conformance harness bookkeeping', () => {
  const check = (id: string, status: Check['status']): Check => ({ id, name: id, description: id, status });
  const run = (scenarios: Record<string, Check[]>, extra: Partial<ConformanceRun> = {}): ConformanceRun => ({
    ...extra,
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

  it('a requirements run is judged by its revision; a scenario-wide entry covers every check of that status', () => {
    const twentySix = { requirements: '2026-07-28' as const };
    const tasksFailing = run(
      {
        'tasks-lifecycle': [check('tasks-sync-tool-call', 'FAILURE'), check('tasks-other', 'FAILURE')],
        // The 0.1.16 list does not apply: this warning is unexpected here.
        'server-sse-polling': [check('server-sse-priming-event', 'WARNING')],
      },
      twentySix,
    );
    const result = evaluate(tasksFailing);
    expect(result.unexpected).toEqual([
      'server-sse-polling/server-sse-priming-event: WARNING server-sse-priming-event',
    ]);
    expect(result.stale).toEqual([]);
    // The scenario passes now: its entry is stale, so the list stays exact.
    const tasksPassing = evaluate(
      run({ 'tasks-lifecycle': [check('tasks-sync-tool-call', 'SUCCESS')] }, twentySix),
    );
    expect(tasksPassing.stale).toEqual(['tasks-lifecycle/*: expected FAILURE, no longer happens']);
    expect(KNOWN_NON_SUCCESS_BY_REVISION['2025-11-25']).toEqual([]);
  });

  it("reads the suite's not-scored scenarios and their reasons from its summary", () => {
    const log = [
      '✓ tools-list: 2 passed, 0 failed',
      '✗ tasks-lifecycle: 1 passed, 8 failed',
      '',
      'Total: 3 passed, 8 failed',
      '',
      'Not scored for 2026-07-28: 2 scenario(s) run, 1 failing. These do not affect conformance.',
      '  ✗ tasks-lifecycle (extension)',
      '  ✓ http-header-validation (pending)',
    ].join('\n');
    expect(readNotScored(log)).toEqual({
      'tasks-lifecycle': 'extension',
      'http-header-validation': 'pending',
    });
    expect(readNotScored('✓ ping: 1 passed, 0 failed')).toEqual({});
  });
});
