import { hostname, userInfo } from 'node:os';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { boundedText } from './client-text.js';

/** What is known of the caller of a request: the transport's authentication, and the client's own name. */
export interface CallerInfo {
  authInfo?: AuthInfo;
  clientName?: string;
}

/**
 * Default actor: the authenticated subject of a bearer token, else the local
 * process identity plus the client's name (stdio). Never anything the model
 * can type, and never the token itself.
 */
export function defaultActorOf(info: CallerInfo): string {
  const auth = info.authInfo;
  if (auth) {
    const subject =
      (auth.extra as { subject?: unknown; actor?: unknown } | undefined)?.actor ?? auth.extra?.subject;
    return `token:${typeof subject === 'string' && subject ? subject : auth.clientId}`;
  }
  // The client's name is its own to choose, and an actor is kept on every journal row: bounded.
  return `local:${localIdentity()}/${info.clientName === undefined ? 'unknown-client' : boundedText(info.clientName)}`;
}

/**
 * Which OAuth token a caller presented, for the journal: its issuer and id
 * (jti), never the token. Undefined for static bearer tokens and no auth.
 */
export function tokenRefOf(info: CallerInfo): TokenRef | undefined {
  const extra = info.authInfo?.extra as { issuer?: unknown; jti?: unknown } | undefined;
  if (typeof extra?.issuer !== 'string') return undefined;
  return { issuer: extra.issuer, jti: typeof extra.jti === 'string' ? extra.jti : null };
}

export interface TokenRef {
  issuer: string;
  jti: string | null;
}

/** user@host of this process: asked of the OS once (it was a measurable part of every call). */
let local: string | undefined;
function localIdentity(): string {
  if (local === undefined) {
    let user: string;
    try {
      user = userInfo().username;
    } catch {
      user = `uid-${process.getuid?.() ?? 'unknown'}`;
    }
    local = `${user}@${hostname()}`;
  }
  return local;
}
