import { encodeHeaderValue } from './param-headers.js';
import { ENVELOPE, envelopeOf } from './revisions.js';

/** What one request (by its JSON-RPC id) adds to its own POST: `Mcp-Param-*` headers, an abort of its stream. */
export interface PerRequestHttp {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/**
 * The 2026-07-28 revision wants the method (and the tool, prompt or resource
 * named) in headers too (SEP-2243): added to every POST whose body carries an
 * envelope. A name that is not plain printable ASCII goes Base64-encoded, as
 * the revision says.
 *
 * `perRequest` gives what one request adds (looked up by its id): the
 * `Mcp-Param-*` headers its tool declares, and a signal that closes its
 * stream — the SDK 1.x client transport has no per-request abort, and in
 * this revision closing a request's stream is how it is cancelled (a
 * `subscriptions/listen` stream ends that way).
 */
export function withStandardHeaders(perRequest?: (id: unknown) => PerRequestHttp | undefined): typeof fetch {
  return (input, init) => standardHeaders(input, init, perRequest);
}

function standardHeaders(
  input: Parameters<typeof fetch>[0],
  init: Parameters<typeof fetch>[1],
  perRequest: ((id: unknown) => PerRequestHttp | undefined) | undefined,
): Promise<Response> {
  if (typeof init?.body !== 'string' || !init.body.includes(ENVELOPE.protocolVersion))
    return fetch(input, init);
  let message: { id?: unknown; method?: unknown; params?: { name?: unknown; uri?: unknown } };
  try {
    message = JSON.parse(init.body) as typeof message;
  } catch {
    return fetch(input, init);
  }
  if (typeof message.method !== 'string') return fetch(input, init);
  const headers = new Headers(init.headers);
  const extra = message.id === undefined ? undefined : perRequest?.(message.id);
  for (const [name, value] of Object.entries(extra?.headers ?? {})) headers.set(name, value);
  headers.set('mcp-method', message.method);
  // The probe goes out before the transport knows the revision it will speak.
  const version = envelopeOf(message.params).protocolVersion;
  if (version && !headers.has('mcp-protocol-version')) headers.set('mcp-protocol-version', version);
  const name = message.method === 'resources/read' ? message.params?.uri : message.params?.name;
  if (['tools/call', 'prompts/get', 'resources/read'].includes(message.method) && typeof name === 'string')
    headers.set('mcp-name', encodeHeaderValue(name));
  const signal =
    extra?.signal && init.signal
      ? AbortSignal.any([init.signal, extra.signal])
      : (extra?.signal ?? init.signal);
  return fetch(input, { ...init, headers, ...(signal ? { signal } : {}) }).then(inBand);
}

/**
 * The revision answers some JSON-RPC errors with an HTTP status of their own
 * (404 for method not found, 400 for a missing client capability or a header
 * mismatch). The SDK 1.x client transport the gateway speaks through turns
 * any non-2xx into a thrown error and drops the answer; given back as a 200,
 * the JSON-RPC error reaches the gateway as the upstream's reply, which is
 * what it is.
 */
async function inBand(response: Response): Promise<Response> {
  if (response.ok || !(response.status === 400 || response.status === 404)) return response;
  if (!/application\/json/i.test(response.headers.get('content-type') ?? '')) return response;
  const text = await response.text();
  let body: { jsonrpc?: unknown; error?: unknown; id?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return new Response(text, { status: response.status, headers: response.headers });
  }
  const isErrorReply =
    body?.jsonrpc === '2.0' && typeof body.error === 'object' && body.id !== undefined && body.id !== null;
  return new Response(text, { status: isErrorReply ? 200 : response.status, headers: response.headers });
}
