import type { HttpToolSpec } from '../../dispatch/http/index.js';

/** The contract an imported operation gets unless the config declares its own, and why. */
export interface SuggestedContract {
  replay: 'read_only' | 'keyed' | 'review';
  why: string;
}

/** An argument offered as the business key (never applied by the import), or why there is none. */
export type BusinessKeySuggestion = { path: string; why: string } | { path?: undefined; why: string };

/**
 * The replay class the document supports: a GET or HEAD reads; an operation that declares an
 * Idempotency-Key header parameter deduplicates on it, so Idem's execution id goes there; anything
 * else may act, and is the cautious default (review). Nothing here is weaker than that default
 * without the document saying so.
 */
export function suggestedContract(
  method: HttpToolSpec['method'],
  idempotencyHeader: string | undefined,
): SuggestedContract {
  if (method === 'GET' || method === 'HEAD')
    return { replay: 'read_only', why: `${method}: the document's method only reads` };
  if (idempotencyHeader)
    return {
      replay: 'keyed',
      why: `${method}: the operation declares the ${idempotencyHeader} header, which carries Idem's execution id`,
    };
  return {
    replay: 'review',
    why: `${method}: may act, and the operation declares no Idempotency-Key header (the cautious default)`,
  };
}

/** A name that reads as an object's id: `id`, `order_id`, `orderId`. */
const ID_NAME = /^(id|.+_id|.+Id)$/;

/**
 * The argument that names the object an operation acts on, offered in `idem lint` as
 * `scope.business_key`: the path parameter of a PUT, PATCH or DELETE when it is the only one, or
 * else the one body field named like an id of an operation without path parameters. When several
 * arguments name the object together (owner, repo, number) none is offered: a key of one of them
 * would make calls on different objects one execution.
 */
export function suggestedBusinessKey(
  method: HttpToolSpec['method'],
  pathArguments: readonly string[],
  bodyFields: readonly string[],
): BusinessKeySuggestion {
  if (method === 'GET' || method === 'HEAD') return { why: 'a read has no business key' };
  if (pathArguments.length === 1 && (method === 'PUT' || method === 'PATCH' || method === 'DELETE'))
    return { path: pathArguments[0] as string, why: `the ${method}'s one path parameter names the object` };
  if (pathArguments.length > 1)
    return {
      why: `the path parameters (${pathArguments.join(', ')}) name the object only together; no single argument can be the key`,
    };
  const ids = bodyFields.filter((field) => ID_NAME.test(field));
  if (pathArguments.length === 0 && ids.length === 1)
    return { path: `body.${ids[0]}`, why: `the body's one id field (${ids[0]}) names the object` };
  return {
    why:
      ids.length > 1 ? `several id fields in the body (${ids.join(', ')})` : 'no argument names the object',
  };
}
