import { MAX_JSON_DEPTH } from '../support/json-depth.js';
import type { ArgumentPath, ArgumentRules } from './argument-rules.js';

/**
 * Secret values shorter than this are not searched for in results and
 * errors: a 3-digit CVV or a 4-digit PIN would turn every "123" or "2024" in
 * a stored result into a redaction, and a replay that misleads is worse than
 * one that repeats a short code to the caller who sent it. Such values still
 * never enter a fingerprint or a preview (those are redacted by path).
 */
export const MIN_REDACTED_SECRET_LENGTH = 6;

/** What a redacted secret value is replaced with, in previews and stored results alike. */
export const SECRET_PLACEHOLDER = '[secret]';

/**
 * The values of a call's secret arguments (the contract's `fingerprint.secrets`
 * and the schema's `writeOnly` / `format: password` paths), as the strings
 * they may be echoed back as: as given, JSON-escaped (a result quoting the
 * request as JSON) and URL-encoded (an error quoting a URL). Longest first,
 * so a secret containing another is replaced whole.
 */
export function secretValues(args: unknown, rules: Pick<ArgumentRules, 'secrets'>): string[] {
  const found = new Set<string>();
  for (const path of rules.secrets) {
    for (const value of valuesAt(args, path.split('.').filter(Boolean), 0)) {
      const text = typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
      if (text === undefined || text.length < MIN_REDACTED_SECRET_LENGTH) continue;
      addForms(found, text);
    }
  }
  return longestFirst(found);
}

/** A secret as it may be echoed back: as given, JSON-escaped, URL-encoded. */
function addForms(into: Set<string>, text: string): void {
  into.add(text);
  into.add(JSON.stringify(text).slice(1, -1));
  into.add(encodeURIComponent(text));
}

function longestFirst(values: Iterable<string>): string[] {
  return [...values].sort((a, b) => b.length - a.length);
}

/**
 * Secret values this process holds that arrive in no argument: resolved
 * credentials (src/credentials) and what is derived from them (an
 * `Authorization` header value). Whatever is stored, journaled, logged or
 * answered passes through `redact`, so a target that echoes a credential back
 * (in a body, in an error) hands it to nobody. Values shorter than
 * MIN_REDACTED_SECRET_LENGTH are refused: they could not be scrubbed reliably.
 */
export class KnownSecrets {
  readonly #values = new Set<string>();
  #sorted: string[] = [];

  /** Adds a value (with its echoed forms). Throws if it is too short to be scrubbed. */
  add(value: string): void {
    if (value.length < MIN_REDACTED_SECRET_LENGTH)
      throw new Error(
        `a secret shorter than ${MIN_REDACTED_SECRET_LENGTH} characters cannot be scrubbed reliably`,
      );
    if (this.#values.has(value)) return;
    const before = this.#values.size;
    addForms(this.#values, value);
    if (this.#values.size !== before) this.#sorted = longestFirst(this.#values);
  }

  values(): readonly string[] {
    return this.#sorted;
  }

  /** A copy of `value` with every known secret replaced (see redactSecrets). */
  redact<T>(value: T): T {
    return redactSecrets(value, this.#sorted);
  }
}

/**
 * A copy of `value` with every occurrence of each secret in its strings
 * replaced, at any depth (content text, structuredContent, resource text,
 * _meta). The input is not changed: the live answer may still carry it.
 * Returns `value` itself when there is nothing to redact.
 */
export function redactSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  return redactIn(value, secrets, 0) as T;
}

function redactIn(node: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof node === 'string') return redactText(node, secrets);
  // A numeric secret (a card number sent as a number) echoed back as a number.
  if (typeof node === 'number') return secrets.includes(String(node)) ? SECRET_PLACEHOLDER : node;
  if (node === null || typeof node !== 'object') return node;
  // Deeper nodes are replaced rather than kept unread; results are cut at this depth anyway.
  if (depth >= MAX_JSON_DEPTH) return SECRET_PLACEHOLDER;
  if (Array.isArray(node)) {
    let copy: unknown[] | undefined;
    node.forEach((child, i) => {
      const next = redactIn(child, secrets, depth + 1);
      if (next === child) return;
      copy ??= node.slice();
      copy[i] = next;
    });
    return copy ?? node;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [key, child] of Object.entries(node)) {
    const next = redactIn(child, secrets, depth + 1);
    const name = redactText(key, secrets);
    if (next === child && name === key) continue;
    copy ??= { ...(node as Record<string, unknown>) };
    if (name !== key) delete copy[key];
    copy[name] = next;
  }
  return copy ?? node;
}

function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(SECRET_PLACEHOLDER);
  return out;
}

/** The values at a path (`*` = every member or element); nothing where the path does not lead. */
function valuesAt(node: unknown, path: readonly ArgumentPath[], index: number): unknown[] {
  if (index === path.length) return [node];
  if (node === null || typeof node !== 'object') return [];
  const head = path[index] as string;
  const children =
    head === '*'
      ? Object.values(node)
      : Object.hasOwn(node, head)
        ? [(node as Record<string, unknown>)[head]]
        : [];
  return children.flatMap((child) => valuesAt(child, path, index + 1));
}
