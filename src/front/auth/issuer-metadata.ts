import { IssuerMetadataError } from '../../errors.js';

/**
 * Where an authorization server publishes its signing keys, read from its
 * metadata: RFC 8414 first (`/.well-known/oauth-authorization-server` inserted
 * before the issuer's path), then OpenID Connect Discovery
 * (`/.well-known/openid-configuration` appended), as the MCP authorization
 * spec has clients do.
 */

const FETCH_TIMEOUT_MS = 5_000;

export function metadataUrlsOf(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/** The issuer's jwks_uri; the metadata must name the same issuer (RFC 8414 §3.3: no mix-up). */
export async function discoverJwksUri(issuer: string): Promise<string> {
  const problems: string[] = [];
  for (const url of metadataUrlsOf(issuer)) {
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
    } catch (error) {
      problems.push(`${url}: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      problems.push(`${url}: HTTP ${response.status}`);
      continue;
    }
    const metadata = (await response.json().catch(() => undefined)) as
      | { issuer?: unknown; jwks_uri?: unknown }
      | undefined;
    if (metadata?.issuer !== issuer) {
      throw new IssuerMetadataError(`${url} names issuer ${JSON.stringify(metadata?.issuer)}, not ${issuer}`);
    }
    if (typeof metadata.jwks_uri !== 'string' || !URL.canParse(metadata.jwks_uri)) {
      throw new IssuerMetadataError(`${url} has no jwks_uri`);
    }
    return metadata.jwks_uri;
  }
  throw new IssuerMetadataError(`no metadata for issuer ${issuer}: ${problems.join('; ')}`);
}
