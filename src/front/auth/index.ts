// The HTTP front's auth: static bearer tokens and OAuth 2.1 access tokens (docs/auth.md).
export { bearerChallenge } from './challenge.js';
export { createFrontAuth, type FrontAuthOptions, type OAuthFront, type TokenFacts } from './front-auth.js';
export { discoverJwksUri } from './issuer-metadata.js';
export { METADATA_PREFIX, metadataUrlOf, protectedResourceMetadata } from './protected-resource.js';
export { grantedScopes, missingScopes, ScopePolicy } from './scopes.js';
export { TokenVerifier, type TokenVerifierOptions, type VerifiedToken } from './token-verifier.js';
export type { Authentication, AuthRefusal, FrontAuth } from './types.js';
