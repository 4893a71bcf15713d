/**
 * Network error codes raised before a byte of a request can have been
 * written: the connection (or its TLS handshake) never came up. Node and
 * undici connect, and finish TLS, before they write; every other error — a
 * reset, a socket closed mid-request, a timeout — may come after the target
 * acted. One list for every channel that speaks over a socket (HTTP targets,
 * HTTP upstream MCP servers), so "nothing was sent" means the same everywhere.
 */
const NEVER_SENT = new Set([
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

/** How deep a chain of `cause`s is searched (fetch wraps undici's error, which may wrap the socket's). */
const MAX_CAUSE_DEPTH = 4;

/** The code that says nothing was sent, if this error (or one of its causes) carries one. */
export function neverSentCode(error: unknown): string | undefined {
  for (
    let e = error, depth = 0;
    e && depth < MAX_CAUSE_DEPTH;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NEVER_SENT.has(code) || code.startsWith('ERR_SSL_'))) return code;
  }
  return undefined;
}
