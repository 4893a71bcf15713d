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
  return fetch(input, { ...init, headers });
};
