import { describe, expect, it } from 'vitest';
import { createLog } from '../../support/log.js';
import { logSkippedLine, logUpstreamLifecycle } from './log.js';

const capture = () => {
  const lines: Record<string, unknown>[] = [];
  const log = createLog({ format: 'json', level: 'debug', write: (l) => lines.push(JSON.parse(l)) });
  return { lines, log };
};

describe("the operator's lines about upstreams", () => {
  it('a skipped stdout line: scrubbed whole, then cut (a secret across the cut is not left half visible)', () => {
    const { lines, log } = capture();
    const secret = 'sk_live_0123456789abcdef';
    // The secret straddles the cut at 200 characters; scrubbed first, it ends before it.
    const line = `${'x'.repeat(185)}${secret} ${'y'.repeat(500)}`;
    logSkippedLine(
      log,
      (t) => t.replaceAll(secret, '[secret]'),
      { upstream: 'pay', session: 's1' },
      {
        reason: 'not_json',
        line,
        bytes: line.length,
      },
    );
    expect(lines).toHaveLength(1);
    const [entry] = lines;
    expect(entry).toMatchObject({ level: 'warn', upstream: 'pay', session: 's1', bytes: line.length });
    expect(entry?.msg).toBe('upstream pay wrote a line on stdout that is not JSON; skipped it');
    expect(String(entry?.line)).toContain('x[secret] y');
    expect(String(entry?.line)).not.toContain('sk_');
    expect(String(entry?.line).length).toBeLessThanOrEqual(201);
  });

  it('start, exit and failure to start: each a line naming the upstream, with the reason and the retry', () => {
    const { lines, log } = capture();
    const place = { upstream: 'bad', session: null };
    logUpstreamLifecycle(log, place, { kind: 'started', pid: 42, era: 'legacy', attempt: 0 });
    logUpstreamLifecycle(log, place, { kind: 'down', reason: 'exited with code 1', retryInMs: 250 });
    logUpstreamLifecycle(log, place, {
      kind: 'start_failed',
      reason: 'spawn nosuchcmd ENOENT',
      retryInMs: 500,
    });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['info', 'upstream bad started (pid 42)'],
      ['warn', 'upstream bad went down: exited with code 1; retrying in 250 ms'],
      [
        'error',
        'upstream bad could not be started: spawn nosuchcmd ENOENT; retrying in 500 ms; its tools are unavailable until it starts',
      ],
    ]);
  });
});
