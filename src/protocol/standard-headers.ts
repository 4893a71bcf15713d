import { ENVELOPE, envelopeOf } from './eras.js';

/**
 * The 2026-07-28 revision wants the method (and the tool, prompt or resource
 * named) in headers too (SEP-2243): added to every POST whose body carries an
 * envelope. A name that is not plain printable ASCII is left out rather than
 * mangled; such a server then refuses the request, and says why.
 */
export const withStandardHeaders: typeof fetch = (input, init) => {
  if (typeof init?.body !== 'string' || !init.body.includes(ENVELOPE.protocolVersion))
    return fetch(input, init);
  let message: { method?: unknown; params?: { name?: unknown; uri?: unknown } };
  try {
    message = JSON.parse(init.body) as typeof message;
  } catch {
    return fetch(input, init);
  }
  if (typeof message.method !== 'string') return fetch(input, init);
  const headers = new Headers(init.headers);
  headers.set('mcp-method', message.method);
  // The probe goes out before the transport knows the revision it will speak.
  const version = envelopeOf(message.params).protocolVersion;
  if (version && !headers.has('mcp-protocol-version')) headers.set('mcp-protocol-version', version);
  const name = message.method === 'resources/read' ? message.params?.uri : message.params?.name;
  if (
    ['tools/call', 'prompts/get', 'resources/read'].includes(message.method) &&
    typeof name === 'string' &&
    /^[\x20-\x7e]*$/.test(name)
  )
    headers.set('mcp-name', name);
  return fetch(input, { ...init, headers }).then(inBand);
};

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
