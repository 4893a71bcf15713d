import type { ArgumentPath, ArgumentRules } from './argument-rules.js';
import { type JsonValue, toJsonValue } from './canonical.js';
import type { Fingerprinter } from './fingerprint.js';
import { redactSecrets, SECRET_PLACEHOLDER, secretValues } from './redaction.js';

export interface PreparedArguments {
  /** Deep copy to fingerprint: defaults in, ignored out, secrets replaced by keyed digests. */
  forFingerprint: JsonValue;
  /** Bounded, redacted text for records and logs. */
  preview: string;
}

/** Words that make a member name look secret; such members are redacted from previews even when no contract marks them (defence in depth). */
const SECRET_WORDS = new Set([
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'apikey',
  'authorization',
  'cookie',
  'credential',
  'credentials',
  'privatekey',
  'cardnumber',
  'cvv',
  'cvc',
  'pin',
]);

/**
 * What `looksSecret` said of names already met: a tool's member names repeat on every call, and
 * the split below (two regular expressions) cost ~15 µs a call (issue 30). Short names only, and
 * emptied when full, so names a client makes up cannot make it hold much.
 */
const LOOKS_SECRET = new Map<string, boolean>();
const LOOKS_SECRET_MAX = 4096;
const LOOKS_SECRET_NAME_MAX = 64;

function looksSecret(name: string): boolean {
  if (name.length > LOOKS_SECRET_NAME_MAX) return nameLooksSecret(name);
  let secret = LOOKS_SECRET.get(name);
  if (secret === undefined) {
    if (LOOKS_SECRET.size >= LOOKS_SECRET_MAX) LOOKS_SECRET.clear();
    secret = nameLooksSecret(name);
    LOOKS_SECRET.set(name, secret);
  }
  return secret;
}

/** Splits `apiKey`, `api_key`, `API-KEY` into words and checks words and adjacent pairs, so `compass` or `passenger` do not match. */
function nameLooksSecret(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return words.some((word, i) => SECRET_WORDS.has(word) || SECRET_WORDS.has(word + (words[i + 1] ?? '')));
}

export const PREVIEW_MAX_CHARS = 512;
const PREVIEW_MAX_STRING = 64;

/**
 * Turns validated arguments into what identifies the intent and what may be
 * shown. The input is never mutated; the copy is taken once, here, so a caller
 * changing its arguments object afterwards changes nothing that was claimed.
 */
export function prepareArguments(
  args: unknown,
  rules: ArgumentRules,
  fingerprinter: Fingerprinter,
): PreparedArguments {
  const json = toJsonValue(args ?? {}, fingerprinter.limits);
  const withDefaults = applyDefaults(json, rules.defaults);
  // toJsonValue built a fresh copy and rewrite() copies on write: no clone needed.
  let forFingerprint = withDefaults;
  for (const path of rules.ignore) forFingerprint = rewrite(forFingerprint, split(path), () => undefined);
  for (const path of rules.secrets) {
    forFingerprint = rewrite(forFingerprint, split(path), (v) => ({ $idem_secret: fingerprinter.secret(v) }));
  }
  let redacted = withDefaults;
  for (const path of rules.secrets) redacted = rewrite(redacted, split(path), () => SECRET_PLACEHOLDER);
  // A secret's value can also sit inside another argument (a command line, a URL).
  redacted = redactSecrets(redacted, secretValues(withDefaults, rules));
  return { forFingerprint, preview: previewOf(redacted) };
}

/** Secret paths declared by a JSON Schema: `writeOnly: true` or `format: "password"`. */
export function secretPathsFromSchema(schema: unknown): ArgumentPath[] {
  const found: ArgumentPath[] = [];
  const walk = (node: unknown, path: string[], depth: number) => {
    if (!node || typeof node !== 'object' || depth > 32) return;
    const s = node as Record<string, unknown>;
    if (path.length > 0 && (s.writeOnly === true || s.format === 'password')) {
      found.push(path.join('.'));
      return;
    }
    if (s.properties && typeof s.properties === 'object') {
      for (const [name, child] of Object.entries(s.properties as Record<string, unknown>)) {
        walk(child, [...path, name], depth + 1);
      }
    }
    if (s.items && typeof s.items === 'object') walk(s.items, [...path, '*'], depth + 1);
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
      if (Array.isArray(s[key])) for (const branch of s[key] as unknown[]) walk(branch, path, depth + 1);
    }
  };
  walk(schema, [], 0);
  return [...new Set(found)];
}

function applyDefaults(json: JsonValue, defaults: Readonly<Record<string, JsonValue>>): JsonValue {
  if (Object.keys(defaults).length === 0 || !isObject(json)) return json;
  const out: Record<string, JsonValue> = { ...json };
  // hasOwn, not `in`: a default named `constructor` or `toString` must still be filled in.
  for (const [key, value] of Object.entries(defaults)) {
    if (Object.hasOwn(out, key)) continue;
    Object.defineProperty(out, key, {
      value: structuredClone(value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function split(path: ArgumentPath): string[] {
  return path.split('.').filter((segment) => segment.length > 0);
}

function isObject(v: JsonValue | undefined): v is Record<string, JsonValue> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Copy-on-write replacement at a path; `replace` returning undefined deletes the member. */
function rewrite(
  node: JsonValue,
  path: readonly string[],
  replace: (value: JsonValue) => JsonValue | undefined,
): JsonValue {
  const [head, ...rest] = path;
  if (head === undefined) return node;
  const step = (child: JsonValue) => (rest.length === 0 ? replace(child) : rewrite(child, rest, replace));
  if (Array.isArray(node)) {
    if (head === '*') return node.map((child) => step(child) ?? null);
    const index = Number(head);
    if (!Number.isInteger(index) || index < 0 || index >= node.length) return node;
    const copy = node.slice();
    copy[index] = step(node[index] as JsonValue) ?? null;
    return copy;
  }
  if (!isObject(node)) return node;
  const keys = head === '*' ? Object.keys(node) : Object.hasOwn(node, head) ? [head] : [];
  if (keys.length === 0) return node;
  const copy: Record<string, JsonValue> = { ...node };
  for (const key of keys) {
    const next = step(node[key] as JsonValue);
    if (next === undefined) delete copy[key];
    else copy[key] = next;
  }
  return copy;
}

function previewOf(value: JsonValue): string {
  const shown = JSON.stringify(scrub(value, 0));
  return shown.length > PREVIEW_MAX_CHARS ? `${shown.slice(0, PREVIEW_MAX_CHARS - 1)}…` : shown;
}

function scrub(value: JsonValue, depth: number): JsonValue {
  if (typeof value === 'string') {
    return value.length > PREVIEW_MAX_STRING
      ? `${value.slice(0, PREVIEW_MAX_STRING)}…(${value.length} chars)`
      : value;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 4) return Array.isArray(value) ? `[${value.length} items]` : '{…}';
  if (Array.isArray(value)) return value.slice(0, 8).map((v) => scrub(v, depth + 1));
  const out: Record<string, JsonValue> = {};
  for (const [key, member] of Object.entries(value).slice(0, 16)) {
    out[key] = looksSecret(key) && member !== SECRET_PLACEHOLDER ? '[redacted]' : scrub(member, depth + 1);
  }
  return out;
}
