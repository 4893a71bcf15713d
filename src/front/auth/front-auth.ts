import { createHash } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { bearerChallenge } from './challenge.js';
import { isMetadataPath, metadataUrlOf, protectedResourceMetadata } from './protected-resource.js';
import { missingScopes, type ScopePolicy } from './scopes.js';
import type { TokenVerifier } from './token-verifier.js';
import type { Authentication, AuthRefusal, FrontAuth } from './types.js';

export interface OAuthFront {
  verifier: TokenVerifier;
  issuers: readonly string[];
  /** This gateway's public URL; undefined: the front's own URL. */
  resource?: string;
  scopes: ScopePolicy;
}

export interface FrontAuthOptions {
  /** sha256(token) hex → actor: static tokens, all-powerful (scopes are an OAuth matter). */
  bearer?: ReadonlyMap<string, string>;
  oauth?: OAuthFront;
}

/** What AuthInfo.extra carries for the layers behind the front: who, and which token (never the token). */
export interface TokenFacts {
  actor: string;
  /** OAuth only: the token's issuer and id, recorded in the journal. */
  issuer?: string;
  jti?: string | null;
}

/** RFC 6750 b64token: a token with anything else in it is not one. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The front's auth: static bearer tokens, OAuth access tokens, or both. A
 * token is tried as a static one first (a hash lookup), then as a JWT; the
 * token itself is never kept — AuthInfo carries only who it names.
 */
export function createFrontAuth(options: FrontAuthOptions): FrontAuth {
  const { bearer, oauth } = options;
  const resourceOf = (frontUrl: string) => oauth?.resource ?? frontUrl;
  const challenge = (
    frontUrl: string,
    parts: Omit<Parameters<typeof bearerChallenge>[0], 'resourceMetadata'>,
  ) =>
    bearerChallenge({
      ...(oauth ? { resourceMetadata: metadataUrlOf(resourceOf(frontUrl)) } : {}),
      ...parts,
    });
  const unauthorized = (frontUrl: string, presented: boolean, why: string): { refused: AuthRefusal } => ({
    refused: {
      status: 401,
      challenge: challenge(
        frontUrl,
        presented
          ? { error: 'invalid_token', description: why }
          : { ...(oauth ? { scope: oauth.scopes.everyRequest } : {}) },
      ),
      message: presented
        ? `Unauthorized: ${why}. Get a new token and send it as "Authorization: Bearer <token>".`
        : oauth
          ? 'Unauthorized: a bearer token is required; the WWW-Authenticate header names the metadata of this resource, which names the authorization server.'
          : 'Unauthorized: a valid bearer token is required',
    },
  });
  const insufficient = (
    frontUrl: string,
    needed: readonly string[],
    missing: readonly string[],
  ): AuthRefusal => ({
    status: 403,
    challenge: challenge(frontUrl, {
      error: 'insufficient_scope',
      description: `missing scope ${missing.join(' ')}`,
      scope: needed,
    }),
    message: `Forbidden: the token lacks the scope ${missing.join(' ')}. Get a token with the scope "${needed.join(' ')}" and try again.`,
  });

  const scopesMissing = (auth: AuthInfo | undefined, tool: string): string[] => {
    // Static tokens carry no scopes: the operator who issued one gave it every tool.
    if (!oauth || (auth?.extra as TokenFacts | undefined)?.issuer === undefined) return [];
    return missingScopes(auth?.scopes ?? [], oauth.scopes.forTool(tool));
  };

  return {
    async authenticate(authorization, frontUrl): Promise<Authentication> {
      const token = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
      if (token === undefined) {
        return unauthorized(
          frontUrl,
          authorization !== undefined && /^Bearer\b/i.test(authorization),
          'the Authorization header is not a bearer token',
        );
      }
      const staticActor = bearer?.get(createHash('sha256').update(token).digest('hex'));
      if (staticActor !== undefined) return { auth: authInfo({ actor: staticActor }, staticActor, []) };
      if (!oauth) return unauthorized(frontUrl, true, 'the token is not valid');
      const verified = await oauth.verifier.verify(token, frontUrl);
      if ('problem' in verified) {
        if (verified.problem === 'unavailable') {
          return {
            refused: {
              status: 503,
              message: `Service unavailable: ${verified.message}. The token was not rejected; try again ${
                verified.retryAfterSeconds ? `in ${verified.retryAfterSeconds} s` : 'shortly'
              } with the same token.`,
              ...(verified.retryAfterSeconds ? { retryAfterSeconds: verified.retryAfterSeconds } : {}),
            },
          };
        }
        return unauthorized(frontUrl, true, verified.message);
      }
      const { token: facts } = verified;
      const missing = missingScopes(facts.scopes, oauth.scopes.everyRequest);
      if (missing.length > 0) return { refused: insufficient(frontUrl, oauth.scopes.everyRequest, missing) };
      return {
        auth: {
          ...authInfo(
            { actor: facts.actor, issuer: facts.issuer, jti: facts.jti },
            facts.clientId,
            facts.scopes,
          ),
          expiresAt: facts.expiresAt,
          resource: new URL(resourceOf(frontUrl)),
        },
      };
    },

    authorize(auth, messages, frontUrl) {
      for (const message of messages) {
        const tool = toolCalled(message);
        if (tool === undefined) continue;
        const missing = scopesMissing(auth, tool);
        if (missing.length > 0) return insufficient(frontUrl, oauth?.scopes.forTool(tool) ?? [], missing);
      }
      return undefined;
    },

    scopesMissing,

    acceptedUntil(auth) {
      return oauth && auth.expiresAt !== undefined ? oauth.verifier.acceptedUntil(auth.expiresAt) : undefined;
    },

    wellKnown(pathname, frontUrl) {
      if (!oauth) return undefined;
      const resource = resourceOf(frontUrl);
      if (!isMetadataPath(pathname, [resource, frontUrl])) return undefined;
      return protectedResourceMetadata(resource, oauth.issuers, oauth.scopes.supported);
    },
  };
}

function authInfo(facts: TokenFacts, clientId: string, scopes: string[]): AuthInfo {
  return { token: '', clientId, scopes, extra: { ...facts } };
}

/** The tool a tools/call request names; undefined for any other message. */
function toolCalled(message: unknown): string | undefined {
  const m = message as { method?: unknown; id?: unknown; params?: { name?: unknown } } | null;
  if (m?.method !== 'tools/call' || m.id === undefined) return undefined;
  return typeof m.params?.name === 'string' ? m.params.name : '';
}
