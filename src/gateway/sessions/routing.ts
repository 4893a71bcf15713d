import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConnection } from '../../dispatch/mcp/index.js';

/**
 * Which upstream a non-tool request goes to. One upstream: that one. Several: by prompt-name
 * prefix, else the first that offers the capability, else the first that is serving (one that is
 * down must not take the requests the others could answer). None: undefined.
 */
export function routeFor(
  upstreams: ReadonlyMap<string, UpstreamConnection>,
  request: JSONRPCRequest,
): string | undefined {
  const names = [...upstreams.keys()];
  if (names.length === 1) return names[0];
  const params = request.params as { name?: unknown; ref?: { type?: string; name?: unknown } } | undefined;
  const named =
    typeof params?.name === 'string'
      ? params.name
      : typeof params?.ref?.name === 'string'
        ? params.ref.name
        : undefined;
  if (named) {
    const match = names.find((n) => named.startsWith(`${n}__`));
    if (match) return match;
  }
  const capability = request.method.split('/')[0];
  return (
    names.find((n) => {
      const caps = upstreams.get(n)?.initializeResult?.capabilities as Record<string, unknown> | undefined;
      return capability ? caps?.[capability] !== undefined : false;
    }) ??
    names.find((n) => upstreams.get(n)?.available) ??
    names[0]
  );
}

/** Several upstreams: prompt names carry the upstream prefix on the client side only. */
export function unprefixed(prefixed: boolean, request: JSONRPCRequest): JSONRPCRequest['params'] {
  if (!prefixed || !request.params) return request.params;
  const params = { ...request.params } as Record<string, unknown>;
  if (typeof params.name === 'string') params.name = params.name.replace(/^[A-Za-z0-9_-]+?__/, '');
  return params as JSONRPCRequest['params'];
}
