/**
 * How deep Idem follows a JSON value it keeps or passes on. JSON.parse takes
 * any depth, but JSON.stringify, structuredClone and the canonical digest
 * recurse and overflow the stack some thousands of levels down: a target's
 * answer nested that deep could be neither recorded nor sent to the caller.
 * Redaction walks to the same depth (identity/redaction.ts).
 */
export const MAX_JSON_DEPTH = 256;

/** What stands in place of a value nested below MAX_JSON_DEPTH levels. */
export const TOO_DEEP = '[nested too deep]';

/** What stands in place of an object that contains itself (only a library handler's result can). */
export const CIRCULAR = '[circular]';

/**
 * `value` itself when it nests no deeper than MAX_JSON_DEPTH and contains no
 * cycle; otherwise a copy in which each object or array at that depth is
 * TOO_DEEP, and each that is its own ancestor CIRCULAR (without this, an
 * object holding itself twice would be walked 2^256 ways). The input is not
 * changed. The walk recurses at most MAX_JSON_DEPTH levels itself.
 */
export function withinDepth<T>(value: T): T {
  return cut(value, 0, new Set()) as T;
}

function cut(node: unknown, depth: number, ancestors: Set<object>): unknown {
  if (node === null || typeof node !== 'object') return node;
  if (depth >= MAX_JSON_DEPTH) return TOO_DEEP;
  if (ancestors.has(node)) return CIRCULAR;
  ancestors.add(node);
  try {
    if (Array.isArray(node)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        const next = cut(child, depth + 1, ancestors);
        if (next === child) continue;
        copy ??= node.slice();
        copy[i] = next;
      }
      return copy ?? node;
    }
    let copy: Record<string, unknown> | undefined;
    for (const key of Object.keys(node)) {
      const child = (node as Record<string, unknown>)[key];
      const next = cut(child, depth + 1, ancestors);
      if (next === child) continue;
      // defineProperty, not assignment: a member named __proto__ stays a member.
      copy ??= { ...(node as Record<string, unknown>) };
      Object.defineProperty(copy, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
    return copy ?? node;
  } finally {
    ancestors.delete(node);
  }
}
