import { createHash } from 'node:crypto';

/**
 * The most characters of a text a client chooses — a request id, a tool name before it is looked
 * up, a client's name or version — that are kept as they came wherever they outlive the request:
 * receipts' keys, actors, and the append-only journal, which is never trimmed. A request body may
 * be 4 MiB, and an id as large as the body was journaled five times over (docs/security.md).
 */
export const MAX_CLIENT_TEXT_CHARS = 128;

/** How much of a longer text is kept readable before its digest. */
const KEPT_CHARS = 64;

/**
 * The text when it has at most MAX_CLIENT_TEXT_CHARS characters, else its start, its length and
 * its SHA-256: `abc… (1048576 characters, sha256:…)`. Distinct texts stay distinct, so the result
 * may key a receipt or name an actor: a longer text's form is itself longer than
 * MAX_CLIENT_TEXT_CHARS (64 + at least 69 characters), so no text kept as it came can be written
 * to equal it; and two longer texts share a form only if they share a digest. The digest is taken
 * over the text's JSON form, which — unlike UTF-8 — keeps a lone surrogate apart from another.
 */
export function boundedText(text: string): string {
  if (text.length <= MAX_CLIENT_TEXT_CHARS) return text;
  const digest = createHash('sha256').update(JSON.stringify(text)).digest('base64url');
  // Never half a surrogate pair: what is kept is stored as UTF-8, which has no half characters.
  const end = isHighSurrogate(text.charCodeAt(KEPT_CHARS - 1)) ? KEPT_CHARS - 1 : KEPT_CHARS;
  return `${text.slice(0, end)}… (${text.length} characters, sha256:${digest})`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
