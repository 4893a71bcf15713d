import { canonicalJson, checkedJson, type JsonValue } from '../identity/canonical.js';
import type { Fingerprinter } from '../identity/fingerprint.js';
import type { RequestDigest } from './receipt-book.js';

/**
 * A request this small (values, and characters of its strings and member
 * names) is held by its receipt and digested only if a second request with the
 * same key must be compared with it; a larger one is digested at once. The
 * bound keeps what a receipt holds to about 2 KB, as a client may make the
 * book hold up to 100,000 of them for their retention.
 */
export const LAZY_DIGEST_MAX_VALUES = 32;
export const LAZY_DIGEST_MAX_CHARS = 1024;

/**
 * What a receipt compares a resend with: the request's method and params (not
 * its `_meta`), checked and copied now — a request that cannot be identified
 * gets no receipt (this throws), and a handler that changes its arguments
 * cannot change what a resend is compared with.
 */
export function requestDigest(fingerprinter: Fingerprinter, method: string, params: unknown): RequestDigest {
  const content = checkedJson({ method, params });
  // Digested only if the same key comes again (ReceiptBook.begin): most requests never are.
  if (content.nodes <= LAZY_DIGEST_MAX_VALUES && content.approxBytes <= LAZY_DIGEST_MAX_CHARS)
    return digestWhenCompared(fingerprinter, content.json);
  // Digested now, so a receipt never holds much of what a client sent.
  return fingerprinter.digest('receipt', canonicalJson(content.json));
}

/**
 * A request's receipt digest, computed when called. It holds the request as
 * JSON text, which parses back to the same checked value: a string is what
 * the request costs the receipt, and nothing the handler is given can change
 * it. Built out here, so the function keeps no other variable of `#decide`
 * (the whole message among them) alive for the receipt's retention.
 */
function digestWhenCompared(fingerprinter: Fingerprinter, checked: JsonValue): () => string {
  const text = JSON.stringify(checked);
  return () => fingerprinter.digest('receipt', canonicalJson(JSON.parse(text)));
}
