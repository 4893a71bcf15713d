import {
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import { discoverJwksUri } from './issuer-metadata.js';
import { grantedScopes } from './scopes.js';

export interface TrustedIssuer {
  issuer: string;
  /** Where its keys are; undefined: read from its metadata. */
  jwksUri?: string;
}

export interface TokenVerifierOptions {
  issuers: readonly TrustedIssuer[];
  /** The `aud` values accepted; undefined: the resource (the front's URL when it has none of its own). */
  audience?: readonly string[];
  resource?: string;
  algorithms: readonly string[];
  clockSkewMs: number;
  jwksCacheMs: number;
  jwksCooldownMs: number;
  actorClaim: string;
  prefixIssuer: boolean;
  /** Now, for expiry and not-before (tests move it). Default: the system clock. */
  clock?: () => number;
}

/** What a valid access token says: who calls, for whom it was issued, what it may do. */
export interface VerifiedToken {
  actor: string;
  issuer: string;
  /** The token's id (RFC 7519 jti), for the journal; null when the issuer sets none. */
  jti: string | null;
  clientId: string;
  scopes: string[];
  /** Seconds since the epoch. */
  expiresAt: number;
}

export type Verification =
  | { token: VerifiedToken }
  /** `invalid`: the token is refused (401); `unavailable`: it cannot be checked now (503), `retryAfterSeconds` when known. */
  | { problem: 'invalid' | 'unavailable'; message: string; retryAfterSeconds?: number };

type RemoteKeys = ReturnType<typeof createRemoteJWKSet>;

/** After the issuer's metadata could not be read, this long before it is asked again. */
const DISCOVERY_RETRY_MS = 5_000;

/** Key ids remembered per issuer (a withdrawn one is told from a new one by them); the oldest go first. */
const MAX_SEEN_KEY_IDS = 256;

/** What the key sets fetched from one issuer have named: the last set's key ids, and every one seen. */
interface SeenKeys {
  set: ReturnType<RemoteKeys['jwks']>;
  current: Set<string>;
  seen: Set<string>;
}

/**
 * Checks OAuth 2.1 access tokens (signed JWTs, RFC 9068) with `jose`: a
 * trusted issuer, one of the accepted algorithms (never `none`, never HMAC), a
 * key the issuer publishes, this gateway as audience, inside its lifetime.
 * Keys are fetched from the issuer, cached, and fetched again when a token
 * names a key not seen yet (rotation).
 */
export class TokenVerifier {
  readonly #options: TokenVerifierOptions;
  readonly #issuers: Map<string, TrustedIssuer>;
  readonly #keys = new Map<string, { keys: Promise<RemoteKeys>; failedAt?: number }>();
  readonly #seenKeys = new Map<string, SeenKeys>();
  readonly #clock: () => number;

  constructor(options: TokenVerifierOptions) {
    this.#options = options;
    this.#issuers = new Map(options.issuers.map((i) => [i.issuer, i]));
    this.#clock = options.clock ?? Date.now;
  }

  /** The audiences a token must name one of; `frontUrl` stands in for an unconfigured resource. */
  audienceFor(frontUrl: string): string[] {
    return [...(this.#options.audience ?? [this.#options.resource ?? frontUrl])];
  }

  /**
   * The last instant (ms) at which a token whose `exp` is `expiresAt` (s) is
   * still accepted: exp plus the clock-skew leeway, as `verify` judges it.
   */
  acceptedUntil(expiresAt: number): number {
    return (expiresAt + this.#leewaySeconds()) * 1000;
  }

  #leewaySeconds(): number {
    return Math.ceil(this.#options.clockSkewMs / 1000);
  }

  async verify(token: string, frontUrl: string): Promise<Verification> {
    let claimedIssuer: unknown;
    try {
      claimedIssuer = decodeJwt(token).iss;
    } catch {
      return { problem: 'invalid', message: 'the bearer token is not a JWT access token' };
    }
    const issuer = typeof claimedIssuer === 'string' ? this.#issuers.get(claimedIssuer) : undefined;
    if (!issuer)
      return { problem: 'invalid', message: 'the token was issued by an issuer this gateway does not trust' };
    let keys: RemoteKeys;
    try {
      keys = await this.#keysOf(issuer);
    } catch (error) {
      return {
        problem: 'unavailable',
        message: `the issuer's signing keys cannot be found: ${describe(error)}`,
      };
    }
    // Inside the cooldown jose does not fetch the keys again: a key id it does not know may be one
    // published since the last fetch (a rotation), which this gateway cannot check yet.
    const coolingDown = keys.coolingDown;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: issuer.issuer,
        audience: this.audienceFor(frontUrl),
        algorithms: [...this.#options.algorithms],
        clockTolerance: this.#leewaySeconds(),
        currentDate: new Date(this.#clock()),
        // A token that never expires cannot be revoked by waiting: refused.
        requiredClaims: ['exp', this.#options.actorClaim],
      }));
    } catch (error) {
      if (error instanceof joseErrors.JWKSNoMatchingKey && coolingDown)
        return this.#withdrawn(issuer.issuer, keys, token) ? withdrawnKey() : this.#notYetFetchable();
      return refusalOf(error);
    } finally {
      this.#seen(issuer.issuer, keys);
    }
    const named = payload[this.#options.actorClaim];
    if (typeof named !== 'string' || named === '') {
      return { problem: 'invalid', message: `the token's ${this.#options.actorClaim} claim names no caller` };
    }
    const clientId = [payload.client_id, payload.azp, payload.appid].find((c) => typeof c === 'string' && c);
    return {
      token: {
        // An issuer URL has no fragment (RFC 8414 §2), so "#" cannot be part of it.
        actor: this.#options.prefixIssuer ? `${issuer.issuer}#${named}` : named,
        issuer: issuer.issuer,
        jti: typeof payload.jti === 'string' ? payload.jti : null,
        clientId: (clientId as string | undefined) ?? named,
        scopes: grantedScopes(payload),
        expiresAt: payload.exp as number,
      },
    };
  }

  /**
   * A token whose key id was not in the issuer's key set when it was last
   * fetched, under `jwks_cooldown` ago. Calling it invalid would make a client
   * with a genuine token of a just-rotated key fetch a new token (of the same
   * key) and be refused again, for as long as anyone, with a junk token, keeps
   * the cooldown going; a 503 keeps the token and says when to retry, by which
   * time the keys can be fetched again.
   */
  #notYetFetchable(): Verification {
    const seconds = Math.max(1, Math.ceil(this.#options.jwksCooldownMs / 1000));
    return {
      problem: 'unavailable',
      retryAfterSeconds: seconds,
      message: `the token is signed by a key the issuer did not publish when its keys were last fetched (under ${seconds} s ago, jwks_cooldown); they can be fetched again within ${seconds} s`,
    };
  }

  /**
   * Whether the token names a key the issuer withdrew: one a key set fetched from it named, and
   * the last one fetched does not. Unlike a key id never seen (which may be a key published since,
   * not yet fetchable), that token can never be accepted again: it is invalid now, so that its
   * client fetches a new token at once instead of waiting out the cooldown.
   */
  #withdrawn(issuer: string, keys: RemoteKeys, token: string): boolean {
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return false;
    }
    const known = this.#seen(issuer, keys);
    return typeof kid === 'string' && known.seen.has(kid) && !known.current.has(kid);
  }

  /** The key ids the issuer's key sets named, updated when jose holds a newly fetched set. */
  #seen(issuer: string, keys: RemoteKeys): SeenKeys {
    let known = this.#seenKeys.get(issuer);
    if (!known) {
      known = { set: undefined, current: new Set(), seen: new Set() };
      this.#seenKeys.set(issuer, known);
    }
    const set = keys.jwks();
    if (set === known.set) return known;
    known.set = set;
    known.current = new Set(
      (set?.keys ?? []).flatMap((key) => (typeof key.kid === 'string' ? [key.kid] : [])),
    );
    for (const kid of known.current) {
      // Seen again: moved to the newest end, so that trimming drops what was withdrawn longest ago.
      known.seen.delete(kid);
      known.seen.add(kid);
    }
    for (const kid of known.seen) {
      if (known.seen.size <= MAX_SEEN_KEY_IDS) break;
      if (!known.current.has(kid)) known.seen.delete(kid);
    }
    return known;
  }

  /** The issuer's key set; a failed discovery is retried after a pause, not on every request. */
  #keysOf(issuer: TrustedIssuer): Promise<RemoteKeys> {
    const known = this.#keys.get(issuer.issuer);
    if (known && (known.failedAt === undefined || this.#clock() - known.failedAt < DISCOVERY_RETRY_MS)) {
      return known.keys;
    }
    const entry: { keys: Promise<RemoteKeys>; failedAt?: number } = {
      keys: (issuer.jwksUri ? Promise.resolve(issuer.jwksUri) : discoverJwksUri(issuer.issuer)).then((uri) =>
        createRemoteJWKSet(new URL(uri), {
          cacheMaxAge: this.#options.jwksCacheMs,
          cooldownDuration: this.#options.jwksCooldownMs,
          timeoutDuration: 5_000,
        }),
      ),
    };
    entry.keys.catch(() => {
      entry.failedAt = this.#clock();
    });
    this.#keys.set(issuer.issuer, entry);
    return entry.keys;
  }
}

function withdrawnKey(): Verification {
  return { problem: 'invalid', message: 'the token is signed by a key its issuer no longer publishes' };
}

/** Problems of the token itself are a 401; a key set that cannot be fetched is the gateway's (503). */
function refusalOf(error: unknown): Verification {
  if (error instanceof joseErrors.JWTExpired) return { problem: 'invalid', message: 'the token has expired' };
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    const claim =
      error.claim === 'aud' ? 'audience (it was issued for another resource)' : `${error.claim} claim`;
    return { problem: 'invalid', message: `the token's ${claim} is not accepted: ${error.reason}` };
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed) {
    return {
      problem: 'invalid',
      message: 'the token is signed with an algorithm this gateway does not accept',
    };
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) {
    return { problem: 'invalid', message: 'the token is signed by a key its issuer does not publish' };
  }
  if (
    error instanceof joseErrors.JWSSignatureVerificationFailed ||
    error instanceof joseErrors.JWSInvalid ||
    error instanceof joseErrors.JWTInvalid
  ) {
    return { problem: 'invalid', message: 'the token signature or format is invalid' };
  }
  return {
    problem: 'unavailable',
    message: `the issuer's signing keys cannot be fetched: ${describe(error)}`,
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
