import type { HttpToolSpec } from './spec.js';

export type StatusOutcome = 'completed' | 'failed' | 'unknown';

type Pattern = number | string;

function matches(status: number, pattern: Pattern): boolean {
  if (typeof pattern === 'number') return status === pattern;
  if (/^[1-5]xx$/.test(pattern)) return Math.floor(status / 100) === Number(pattern[0]);
  const [from, to] = pattern.split('-').map(Number) as [number, number | undefined];
  return to === undefined ? status === from : status >= from && status <= to;
}

/**
 * What a status means for the action (docs/channels-http.md, "Outcome rules"). By
 * default 2xx completed and 4xx failed (the target said no; nothing took
 * effect); anything else is unknown — a 5xx may have half-happened, and a
 * 3xx not followed does not say what the target did. The configured lists
 * are tried in the order completed, failed, unknown.
 */
export function statusOutcome(status: number, rules: HttpToolSpec['outcome']): StatusOutcome {
  const lists: Array<[StatusOutcome, Pattern[]]> = [
    ['completed', rules?.completed ?? ['2xx']],
    ['failed', rules?.failed ?? ['4xx']],
    ['unknown', rules?.unknown ?? []],
  ];
  for (const [outcome, patterns] of lists) if (patterns.some((p) => matches(status, p))) return outcome;
  return 'unknown';
}

/**
 * undici refused the request's own options — a header value HTTP cannot carry,
 * say — while building it, before it took a connection: nothing was sent, and
 * the same request would be refused again.
 */
export function refusedBeforeSending(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'UND_ERR_INVALID_ARG';
}
