import type { HttpToolSpecInput } from '../../dispatch/http/index.js';
import type { HttpToolsFromEntry } from './config.js';
import type { OpenApiDocument, Operation, SecurityScheme } from './document.js';

export type CredentialUse = NonNullable<HttpToolSpecInput['credential']>;

/** How the configured credential reaches an operation, what it fills in, and what to tell the operator. */
export type CredentialMapping =
  | {
      use?: CredentialUse;
      /** The parameter the credential fills (an API key declared as a parameter too): not an argument. */
      fills?: { in: 'header' | 'query'; name: string };
      note?: string;
    }
  | { unmappable: string };

/**
 * The operation's security requirements (its own, else the document's) mapped to the one
 * credential the config names: the first alternative that a single credential can carry — HTTP
 * bearer, OAuth 2 and OpenID Connect as a bearer token, HTTP basic with the configured username,
 * an API key in a header or the query. A document that declares no security at all gets the
 * credential as a bearer token (said in lint). An operation whose every alternative needs
 * something else (a cookie, two credentials at once) cannot be called with it: skipped.
 */
export function credentialFor(
  operation: Operation,
  document: OpenApiDocument,
  entry: HttpToolsFromEntry,
): CredentialMapping {
  if (!entry.credential) return {};
  const requirements = operation.security ?? document.security;
  if (requirements === undefined)
    return {
      use: { name: entry.credential, scheme: 'bearer' },
      note: 'the document declares no security: the credential is sent as a bearer token',
    };
  if (requirements.length === 0) return { note: 'the operation needs no credential: none sent' };
  const reasons: string[] = [];
  for (const alternative of requirements) {
    const names = Object.keys(alternative);
    if (names.length === 0) return { note: 'the operation allows anonymous calls: no credential sent' };
    if (names.length > 1) {
      reasons.push(`${names.join(' + ')} needs several credentials at once`);
      continue;
    }
    const name = names[0] as string;
    const scheme = document.components?.securitySchemes?.[name];
    const mapped = scheme ? useOf(scheme, entry) : `security scheme ${name} is not declared`;
    if (typeof mapped !== 'string') return mapped;
    reasons.push(`${name}: ${mapped}`);
  }
  return {
    unmappable: `its security cannot be carried by credential ${entry.credential} (${reasons.join('; ')})`,
  };
}

function useOf(scheme: SecurityScheme, entry: HttpToolsFromEntry): CredentialMapping | string {
  const name = entry.credential as string;
  if (scheme.type === 'http') {
    const kind = (scheme.scheme ?? '').toLowerCase();
    if (kind === 'bearer') return { use: { name, scheme: 'bearer' } };
    if (kind === 'basic')
      return entry.username !== undefined
        ? { use: { name, scheme: 'basic', username: entry.username } }
        : 'HTTP basic needs username: beside credential: in http_tools_from';
    return `HTTP ${scheme.scheme} is not a scheme Idem sends`;
  }
  if (scheme.type === 'oauth2' || scheme.type === 'openIdConnect')
    return {
      use: { name, scheme: 'bearer' },
      note: `${scheme.type}: the credential is sent as its access token (bearer)`,
    };
  if (scheme.type === 'apiKey' && scheme.name) {
    if (scheme.in === 'header')
      return {
        use: { name, scheme: 'header', header: scheme.name },
        fills: { in: 'header', name: scheme.name },
      };
    if (scheme.in === 'query')
      return {
        use: { name, scheme: 'query', param: scheme.name },
        fills: { in: 'query', name: scheme.name },
      };
    return `an API key in a ${scheme.in} is not sent by Idem`;
  }
  return `${scheme.type} is not a scheme Idem sends`;
}
