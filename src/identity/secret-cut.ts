import { redactSecrets, SECRET_PLACEHOLDER } from './redaction.js';

/**
 * The fewest characters of a secret, left by a cut, that are taken for the
 * secret. A cut can halve a secret a target echoed, and scrubbing whole
 * values afterwards no longer finds either half; so what a cut leaves at its
 * edge that a secret begins (or, for a tail, ends) with is replaced as the
 * secret. Below this length the edge is taken for chance — one or two
 * characters that merely look like a secret's first ones are common, and
 * say nothing about a secret of at least MIN_REDACTED_SECRET_LENGTH
 * characters.
 */
export const MIN_CUT_SECRET_CHARS = 3;

export interface Cut {
  text: string;
  /** Whether anything was left out. */
  cut: boolean;
}

/**
 * The start of `text`, at most `limit` characters or UTF-8 bytes (never half
 * a character), with no part of a secret in it: every whole secret is
 * replaced first, so that one straddling the cut is replaced rather than
 * halved; then the text is cut — a placeholder the cut would halve is kept
 * whole, a few characters over the limit — and an end that a secret begins
 * with is replaced as the secret. `complete: false` says `text` is itself
 * only the start of something longer (a body read no further): its end is a
 * cut even where it fits.
 */
export function headWithoutSecrets(
  text: string,
  limit: number,
  secrets: readonly string[],
  options: { unit: 'chars' | 'bytes'; complete?: boolean },
): Cut {
  const redacted = redactSecrets(text, secrets);
  let end = options.unit === 'bytes' ? charsWithinBytes(redacted, limit) : charsWithin(redacted, limit);
  if (end === redacted.length && options.complete !== false) return { text: redacted, cut: false };
  const placeholder = redacted.lastIndexOf(SECRET_PLACEHOLDER, end - 1);
  if (placeholder >= 0 && placeholder + SECRET_PLACEHOLDER.length > end)
    end = placeholder + SECRET_PLACEHOLDER.length;
  const head = redacted.slice(0, end);
  const from = secretBeginningAtEnd(head, secrets);
  return { text: from === undefined ? head : `${head.slice(0, from)}${SECRET_PLACEHOLDER}`, cut: true };
}

/**
 * `text` that is the end of something longer (an output tail cut where it
 * began), with no part of a secret in it: whole secrets replaced, and a
 * start that a secret ends with replaced as the secret.
 */
export function tailWithoutSecrets(text: string, secrets: readonly string[]): string {
  const redacted = redactSecrets(text, secrets);
  const to = secretEndingAtStart(redacted, secrets);
  return to === undefined ? redacted : `${SECRET_PLACEHOLDER}${redacted.slice(to)}`;
}

/** Where the longest end of `head` that is a secret's beginning (≥ MIN_CUT_SECRET_CHARS) starts. */
function secretBeginningAtEnd(head: string, secrets: readonly string[]): number | undefined {
  const longest = secrets.reduce((n, s) => Math.max(n, s.length), 0);
  for (
    let from = Math.max(0, head.length - longest + 1);
    from <= head.length - MIN_CUT_SECRET_CHARS;
    from++
  ) {
    const end = head.slice(from);
    if (secrets.some((s) => s.length > end.length && s[0] === end[0] && s.startsWith(end))) return from;
  }
  return undefined;
}

/** Where the longest start of `text` that is a secret's end (≥ MIN_CUT_SECRET_CHARS) ends. */
function secretEndingAtStart(text: string, secrets: readonly string[]): number | undefined {
  const longest = secrets.reduce((n, s) => Math.max(n, s.length), 0);
  for (let to = Math.min(text.length, longest - 1); to >= MIN_CUT_SECRET_CHARS; to--) {
    const start = text.slice(0, to);
    if (secrets.some((s) => s.length > to && s.at(-1) === start.at(-1) && s.endsWith(start))) return to;
  }
  return undefined;
}

/** How many UTF-16 units of `text` make at most `limit`, without splitting a surrogate pair. */
function charsWithin(text: string, limit: number): number {
  if (text.length <= limit) return text.length;
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}

/** How many UTF-16 units of `text` encode in at most `limit` UTF-8 bytes, whole characters only. */
function charsWithinBytes(text: string, limit: number): number {
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const point = text.codePointAt(i) as number;
    const size = point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4;
    if (bytes + size > limit) break;
    bytes += size;
    i += point >= 0x10000 ? 2 : 1;
  }
  return i;
}
