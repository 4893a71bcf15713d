import canonicalize from 'canonicalize';
import { InvalidInputError } from '../errors.js';

/**
 * Limits on what Idem will canonicalize. They bound the work done before a call
 * is even identified, so a hostile or broken client cannot make identification
 * itself the expensive step. Documented in docs/errors.md.
 */
export interface CanonicalLimits {
  /** Deepest nesting of objects/arrays (the top value is depth 1). */
  maxDepth: number;
  /** Largest canonical encoding, in UTF-8 bytes. */
  maxBytes: number;
  /** Most values (objects, arrays, primitives) in one document. */
  maxNodes: number;
}

export const DEFAULT_CANONICAL_LIMITS: CanonicalLimits = Object.freeze({
  maxDepth: 64,
  // As large as the HTTP front accepts a whole request: an argument that may be sent may be identified.
  maxBytes: 4 * 1024 * 1024,
  maxNodes: 100_000,
});

/** A JSON value as the canonical form sees it (after `toJSON`). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Checks that `value` is something RFC 8785 can encode, within limits, and
 * returns a plain JSON copy of it (toJSON applied, undefined members dropped).
 * Every rejection is an InvalidInputError naming the path and the reason:
 * never a crash, never a silently different encoding.
 */
export function toJsonValue(value: unknown, limits: CanonicalLimits = DEFAULT_CANONICAL_LIMITS): JsonValue {
  return checkedJson(value, limits).json;
}

/**
 * `toJsonValue`, and the size of what it checked: how many values, and the
 * length of its strings and member names (UTF-16 code units, as the limits count).
 */
export function checkedJson(
  value: unknown,
  limits: CanonicalLimits = DEFAULT_CANONICAL_LIMITS,
): { json: JsonValue; nodes: number; approxBytes: number } {
  const ancestors = new Set<object>();
  let nodes = 0;
  let approxBytes = 0;

  const visit = (v: unknown, path: string, depth: number): JsonValue => {
    if (++nodes > limits.maxNodes) {
      throw new InvalidInputError('too_large', path, `more than ${limits.maxNodes} values`);
    }
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      v = (v as { toJSON: () => unknown }).toJSON();
    }
    switch (typeof v) {
      case 'string':
        if (!v.isWellFormed()) {
          throw new InvalidInputError('lone_surrogate', path, 'string contains a lone UTF-16 surrogate');
        }
        approxBytes += v.length;
        if (approxBytes > limits.maxBytes) {
          throw new InvalidInputError('too_large', path, `larger than ${limits.maxBytes} bytes`);
        }
        return v;
      case 'number':
        if (!Number.isFinite(v)) {
          throw new InvalidInputError('non_finite_number', path, `${v} is not a JSON number`);
        }
        return v;
      case 'boolean':
        return v;
      case 'object': {
        if (v === null) return null;
        if (depth > limits.maxDepth) {
          throw new InvalidInputError('too_deep', path, `nested deeper than ${limits.maxDepth} levels`);
        }
        if (ancestors.has(v)) {
          throw new InvalidInputError('cycle', path, 'value refers to itself');
        }
        ancestors.add(v);
        try {
          if (Array.isArray(v)) {
            // Checked before any element is visited: `new Array(1e9)` is one cheap
            // object that `map` would walk (and allocate) a billion times over.
            if (nodes + v.length > limits.maxNodes) {
              throw new InvalidInputError('too_large', path, `more than ${limits.maxNodes} values`);
            }
            const items: JsonValue[] = [];
            // An indexed loop, not `map`: `map` skips holes, which would then encode as null.
            for (let i = 0; i < v.length; i++) {
              const item: unknown = v[i];
              if (item === undefined || typeof item === 'function' || typeof item === 'symbol') {
                throw new InvalidInputError(
                  'unsupported_type',
                  `${path}[${i}]`,
                  `${typeof item} in an array`,
                );
              }
              items.push(visit(item, `${path}[${i}]`, depth + 1));
            }
            return items;
          }
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null) {
            throw new InvalidInputError(
              'unsupported_type',
              path,
              `${proto?.constructor?.name ?? 'object'} is not plain JSON`,
            );
          }
          const out: Record<string, JsonValue> = {};
          for (const [key, member] of Object.entries(v)) {
            // JSON drops undefined members; so do we, so `{a: undefined}` and `{}` are one intent.
            if (member === undefined) continue;
            if (!key.isWellFormed()) {
              throw new InvalidInputError('lone_surrogate', path, 'a key contains a lone UTF-16 surrogate');
            }
            approxBytes += key.length;
            const encoded = visit(member, path ? `${path}.${key}` : key, depth + 1);
            // `out.__proto__ = x` would set the prototype and drop the member (a JSON
            // `{"__proto__": …}` would vanish from the fingerprint); define it instead.
            if (key === '__proto__') {
              Object.defineProperty(out, key, {
                value: encoded,
                enumerable: true,
                writable: true,
                configurable: true,
              });
            } else {
              out[key] = encoded;
            }
          }
          return out;
        } finally {
          ancestors.delete(v);
        }
      }
      default:
        throw new InvalidInputError('unsupported_type', path, `${typeof v} is not JSON`);
    }
  };

  const json = visit(value, '', 1);
  return { json, nodes, approxBytes };
}

/**
 * RFC 8785 (JSON Canonicalization Scheme) encoding of `value`, after the checks
 * of `toJsonValue`. Sorted keys, ES number formatting (`1.0` is `1`), no
 * whitespace — the `canonicalize` package is the reference implementation by
 * the RFC's author.
 */
export function canonicalJson(value: unknown, limits: CanonicalLimits = DEFAULT_CANONICAL_LIMITS): string {
  const json = toJsonValue(value, limits);
  const text = canonicalize(json);
  if (text === undefined) throw new InvalidInputError('unsupported_type', '', 'value has no JSON form');
  if (Buffer.byteLength(text, 'utf8') > limits.maxBytes) {
    throw new InvalidInputError('too_large', '', `canonical form is larger than ${limits.maxBytes} bytes`);
  }
  return text;
}
