/**
 * RFC 9728 Protected Resource Metadata: the document that tells an MCP
 * client, from a 401, which authorization server issues tokens for this
 * gateway and for which resource.
 */
export const METADATA_PREFIX = '/.well-known/oauth-protected-resource';

/** The metadata URL of a resource: the well-known prefix inserted before its path (RFC 9728 §3.1). */
export function metadataUrlOf(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return `${url.origin}${METADATA_PREFIX}${path}`;
}

/** Whether a request path asks for the metadata of one of these resources, or the bare prefix. */
export function isMetadataPath(pathname: string, resources: readonly string[]): boolean {
  if (pathname === METADATA_PREFIX) return true;
  return resources.some((resource) => new URL(metadataUrlOf(resource)).pathname === pathname);
}

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: ['header'];
  resource_name: string;
}

export function protectedResourceMetadata(
  resource: string,
  issuers: readonly string[],
  scopes: readonly string[],
): ProtectedResourceMetadata {
  return {
    resource,
    authorization_servers: [...issuers],
    scopes_supported: [...scopes],
    // Tokens only in the Authorization header: never in a query string, where logs and proxies keep them.
    bearer_methods_supported: ['header'],
    resource_name: 'Idem gateway',
  };
}
