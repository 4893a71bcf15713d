import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { durationMs } from '../../contracts/duration.js';
import { SQLITE_STORE_FILE } from '../../defaults.js';
import { ConfigError } from '../../errors.js';
import { createFrontAuth, type FrontAuth, ScopePolicy, TokenVerifier } from '../../front/auth/index.js';
import type { ReceiptBookOptions } from '../../receipts/receipt-book.js';
import type { StoreSpec } from '../../store/index.js';
import { configKeyMatcher } from '../catalog/tool-names.js';
import { type GatewayConfig, NAME_SEPARATOR } from './config.js';
import { expandEnv } from './env-references.js';

/**
 * What the gateway opens and accepts, read off its config: the store, the receipt book, and the
 * tokens of the HTTP front. Kept apart from the Gateway class, which only wires them up.
 */

/** The config's `receipts:` section as the receipt book takes it; what it leaves out, the book's defaults. */
export function receiptBookOptions(config: GatewayConfig): ReceiptBookOptions {
  const receipts = config.receipts;
  return {
    ...(receipts?.max ? { maxReceipts: receipts.max } : {}),
    ...(receipts?.max_per_actor ? { maxReceiptsPerActor: receipts.max_per_actor } : {}),
    ...(receipts?.retention !== undefined
      ? { retentionMs: durationMs(receipts.retention, 'receipts.retention') }
      : {}),
  };
}

/**
 * The store of a config's `store:` section; undefined without one, for the runtime's default
 * (IDEM_STORE_URL, else SQLite in the data directory: src/runtime).
 */
export function storeSpecOf(config: GatewayConfig, dataDir: string): StoreSpec | undefined {
  const store = config.store;
  if (!store) return undefined;
  if (store.kind === 'memory') return { kind: 'memory' };
  if (store.kind === 'postgres') {
    return {
      kind: 'postgres',
      url: expandEnv(store.url),
      ...(store.schema ? { schema: store.schema } : {}),
      ...(store.statement_timeout !== undefined
        ? { statementTimeoutMs: durationMs(store.statement_timeout, 'store.statement_timeout') }
        : {}),
      ...(store.pool
        ? {
            pool: {
              ...(store.pool.max ? { max: store.pool.max } : {}),
              ...(store.pool.connection_timeout !== undefined
                ? {
                    connectionTimeoutMs: durationMs(
                      store.pool.connection_timeout,
                      'store.pool.connection_timeout',
                    ),
                  }
                : {}),
              ...(store.pool.idle_timeout !== undefined
                ? { idleTimeoutMs: durationMs(store.pool.idle_timeout, 'store.pool.idle_timeout') }
                : {}),
            },
          }
        : {}),
    };
  }
  return {
    kind: 'sqlite',
    path: store.path ? store.path : join(dataDir, SQLITE_STORE_FILE),
    ...(store.synchronous ? { synchronous: store.synchronous } : {}),
  };
}

/** sha256(token) → actor. Tokens come from the environment or as hashes: never in the file in clear. */
export function bearerTokens(config: GatewayConfig): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const entry of config.auth?.bearer ?? []) {
    if ('token_sha256' in entry) tokens.set(entry.token_sha256, entry.actor);
    else {
      const token = process.env[entry.token_env];
      if (!token) throw new ConfigError(`auth.bearer: environment variable ${entry.token_env} is not set`);
      tokens.set(createHash('sha256').update(token).digest('hex'), entry.actor);
    }
  }
  return tokens;
}

/** The HTTP front's auth (static bearer tokens, OAuth), or undefined when the config has none. */
export function frontAuthOf(config: GatewayConfig, clock?: () => number): FrontAuth | undefined {
  const oauth = config.auth?.oauth;
  const bearer = bearerTokens(config);
  if (!oauth && bearer.size === 0) return undefined;
  return createFrontAuth({
    ...(bearer.size > 0 ? { bearer } : {}),
    ...(oauth
      ? {
          oauth: {
            issuers: oauth.issuers.map((i) => i.issuer),
            ...(oauth.resource ? { resource: oauth.resource } : {}),
            scopes: new ScopePolicy(
              oauth.scopes,
              oauth.tool_scopes,
              configKeyMatcher(config, NAME_SEPARATOR),
            ),
            verifier: new TokenVerifier({
              issuers: oauth.issuers.map((i) => ({
                issuer: i.issuer,
                ...(i.jwks_uri ? { jwksUri: i.jwks_uri } : {}),
              })),
              ...(oauth.audience ? { audience: oauth.audience } : {}),
              ...(oauth.resource ? { resource: oauth.resource } : {}),
              algorithms: oauth.algorithms,
              clockSkewMs: durationMs(oauth.clock_skew, 'auth.oauth.clock_skew'),
              jwksCacheMs: durationMs(oauth.jwks_cache, 'auth.oauth.jwks_cache'),
              jwksCooldownMs: durationMs(oauth.jwks_cooldown, 'auth.oauth.jwks_cooldown'),
              actorClaim: oauth.actor.claim,
              prefixIssuer: oauth.actor.prefix_issuer,
              ...(clock ? { clock } : {}),
            }),
          },
        }
      : {}),
  });
}
