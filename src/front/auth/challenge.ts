/**
 * The `WWW-Authenticate: Bearer …` header of a refusal (RFC 6750 §3, RFC 9728
 * §5.1): where the resource's metadata is, what went wrong, which scope is
 * needed. Everything in it is built from the config or from a fixed set of
 * reasons: never from the token.
 */
export interface ChallengeParts {
  /** The RFC 9728 metadata URL (OAuth configured), else a realm is named. */
  resourceMetadata?: string;
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  description?: string;
  /** Scopes needed, space-separated in the header. */
  scope?: readonly string[];
}

export function bearerChallenge(parts: ChallengeParts): string {
  const params: [string, string][] = [];
  if (parts.resourceMetadata) params.push(['resource_metadata', parts.resourceMetadata]);
  else params.push(['realm', 'idem']);
  if (parts.error) params.push(['error', parts.error]);
  if (parts.description) params.push(['error_description', parts.description]);
  if (parts.scope && parts.scope.length > 0) params.push(['scope', parts.scope.join(' ')]);
  return `Bearer ${params.map(([name, value]) => `${name}="${quotable(value)}"`).join(', ')}`;
}

/** RFC 6750 allows %x20-21 / %x23-5B / %x5D-7E inside these quoted strings: anything else becomes a space. */
function quotable(value: string): string {
  return value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, ' ');
}
