import { InvalidInputError } from '../errors.js';
import type { JsonValue } from '../identity/canonical.js';
import type { IntentScope } from './contract.js';

export interface ScopeContext {
  session: string | null;
  /** Clock used for window buckets; injected so tests can cross a bucket boundary. */
  now: number;
}

/**
 * The `intent_scope` member of the canonical action record: what makes two
 * identical-looking calls the same intent. A business key wins wherever the
 * contract names one; a time bucket is only the fallback (docs/contracts.md).
 */
export function intentScopeValue(scope: IntentScope, args: JsonValue, ctx: ScopeContext): JsonValue {
  switch (scope.kind) {
    case 'actor':
      return { kind: 'actor' };
    case 'session':
      return { kind: 'session', session: ctx.session };
    case 'window':
      return { kind: 'window', ms: scope.ms, bucket: Math.floor(ctx.now / scope.ms) };
    case 'business_key':
      return { kind: 'business_key', path: scope.path, value: businessKeyValue(scope.path, args) };
  }
}

/**
 * The value that names the action under a `business_key` scope, read from the
 * prepared arguments (so a key that is also a secret is already digested).
 * Throws InvalidInputError when the call does not give it.
 */
export function businessKeyValue(path: string, args: JsonValue): JsonValue {
  const value = valueAt(args, path);
  if (value === undefined || value === null) {
    throw new InvalidInputError(
      'missing_business_key',
      path,
      `the tool's contract identifies an action by "${path}", and the call does not give it`,
    );
  }
  return value;
}

function valueAt(root: JsonValue, path: string): JsonValue | undefined {
  let node: JsonValue | undefined = root;
  for (const segment of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    // Own members only: `toString` or `length` must not be read off a prototype or an array.
    if (Array.isArray(node)) node = /^(0|[1-9]\d*)$/.test(segment) ? node[Number(segment)] : undefined;
    else node = Object.hasOwn(node, segment) ? node[segment] : undefined;
  }
  return node;
}
