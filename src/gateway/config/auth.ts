import { z } from 'zod';
import { DurationSchema } from '../../contracts/duration.js';

/** The `auth:` section's parts: static bearer tokens and OAuth. */

/** A static bearer token (from the environment, or as its SHA-256) and the actor it names. */
export const BearerTokenSchema = z.union([
  z
    .object({
      token_env: z.string().min(1).describe('The environment variable holding the token.'),
      actor: z.string().min(1).describe('The actor a request with this token acts as.'),
    })
    .strict(),
  z
    .object({
      token_sha256: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .describe('The SHA-256 of the token, in hex: the token itself stays out of the file.'),
      actor: z.string().min(1).describe('The actor a request with this token acts as.'),
    })
    .strict(),
]);

const JWS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

const OAuthIssuer = z
  .object({
    issuer: z
      .url()
      .describe(
        "The authorization server's issuer identifier, exactly as its tokens' iss claim and its metadata say.",
      ),
    jwks_uri: z
      .url()
      .optional()
      .describe(
        'Where its signing keys are. Default: the jwks_uri of its metadata (RFC 8414 /.well-known/oauth-authorization-server, else OpenID /.well-known/openid-configuration).',
      ),
  })
  .strict();

/** `auth.oauth`: tokens from authorization servers, checked by signature, audience and scope (docs/auth.md). */
export const OAuthConfigSchema = z
  .object({
    resource: z
      .url()
      .optional()
      .describe(
        "This gateway's public URL as clients reach it (RFC 8707 resource, RFC 9728 resource): tokens must name it in aud. Default: the HTTP front's own URL (http://<host>:<port><path>); set it when clients go through a proxy.",
      ),
    audience: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'aud values accepted, when the identity provider cannot put the resource URL in aud (Auth0 API identifier, Entra api://… app id URI). Default: [resource].',
      ),
    issuers: z.array(OAuthIssuer).min(1).describe('Authorization servers whose tokens are accepted.'),
    algorithms: z
      .array(z.enum(JWS_ALGORITHMS))
      .min(1)
      .default(['RS256', 'ES256'])
      .describe(
        'Signature algorithms accepted (never none, never HMAC: the gateway holds no shared secret).',
      ),
    scopes: z
      .array(z.string().min(1))
      .default([])
      .describe('Scopes every request needs (from the scope or scp claim).'),
    tool_scopes: z
      .record(z.string(), z.array(z.string().min(1)).min(1))
      .optional()
      .describe(
        'Further scopes a tools/call needs, by gateway-visible tool name; a token without them gets 403 insufficient_scope.',
      ),
    clock_skew: DurationSchema.default('30s').describe('Leeway on exp and nbf.'),
    jwks_cache: DurationSchema.default('10m').describe(
      'How long fetched signing keys are used before fetching them again (a removed key stops working then).',
    ),
    jwks_cooldown: DurationSchema.default('30s').describe(
      'A token signed by an unknown key fetches the keys again (key rotation), at most once per this long.',
    ),
    actor: z
      .object({
        claim: z.string().min(1).default('sub').describe('The claim that names the actor.'),
        prefix_issuer: z
          .boolean()
          .default(false)
          .describe(
            'Actor = <issuer>#<claim value>: required with several issuers, so their subjects never collide.',
          ),
      })
      .strict()
      .default({ claim: 'sub', prefix_issuer: false }),
  })
  .strict()
  .refine((o) => o.issuers.length === 1 || o.actor.prefix_issuer, {
    message:
      'with several issuers, set actor.prefix_issuer: true (two issuers may name different callers alike)',
    path: ['actor', 'prefix_issuer'],
  })
  .refine((o) => new Set(o.issuers.map((i) => i.issuer)).size === o.issuers.length, {
    message: 'an issuer is listed twice',
    path: ['issuers'],
  });
