import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';

/** A request refused by the front's auth, and how to tell the client (RFC 6750 §3). */
export interface AuthRefusal {
  /** 401: no usable token; 403: a valid token without the scope needed; 503: the token cannot be checked now. */
  status: 401 | 403 | 503;
  /** The WWW-Authenticate header value, when there is one to send. */
  challenge?: string;
  /** The JSON-RPC error message: what the caller should do next. */
  message: string;
  /** 503: when to try again (the Retry-After header), if known. */
  retryAfterSeconds?: number;
}

export type Authentication = { auth: AuthInfo } | { refused: AuthRefusal };

/**
 * What the HTTP front asks of its auth (none at all: every caller is
 * unauthenticated). `frontUrl` is the front's own URL, the resource when the
 * config names none.
 */
export interface FrontAuth {
  /** Who the Authorization header's token names; the token is checked and never kept. */
  authenticate(authorization: string | undefined, frontUrl: string): Promise<Authentication>;
  /**
   * A request body this caller may not send (a tool needing a scope its token
   * lacks): the refusal; undefined when every message in it is allowed.
   */
  authorize(auth: AuthInfo, messages: readonly unknown[], frontUrl: string): AuthRefusal | undefined;
  /** The scopes a call of `tool` needs that this caller's token lacks (none for static tokens). */
  scopesMissing(auth: AuthInfo | undefined, tool: string): string[];
  /**
   * Until when (ms, by the auth's clock) this caller's token is accepted;
   * undefined for a token that does not expire (a static bearer).
   */
  acceptedUntil(auth: AuthInfo): number | undefined;
  /** The JSON document served at this /.well-known/ path (RFC 9728), undefined if none. */
  wellKnown(pathname: string, frontUrl: string): unknown;
}
