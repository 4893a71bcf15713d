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
 * What a status means for the action (docs/channels.md, "Outcome rules"). By
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
 * Errors raised before a byte of the request can have been written: the
 * connection (or its TLS handshake) never came up. undici connects, and
 * finishes TLS, before it writes the request; every other error — a reset, a
 * socket closed mid-request, a timeout — may come after the target acted.
 */
const BEFORE_SENDING = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * undici refused the request's own options — a header value HTTP cannot carry,
 * say — while building it, before it took a connection: nothing was sent, and
 * the same request would be refused again.
 */
export function refusedBeforeSending(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'UND_ERR_INVALID_ARG';
}

/** The error code that says nothing was sent, if this error (or its cause) carries one. */
export function notSentCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (BEFORE_SENDING.has(code) || code.startsWith('ERR_SSL_'))) return code;
  }
  return undefined;
}
