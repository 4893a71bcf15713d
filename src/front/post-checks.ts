/**
 * What every POST of the HTTP front goes through once its path and caller are known, whichever
 * transport it is for (Streamable HTTP, or HTTP+SSE's messages): the body read within its limit,
 * JSON-RPC, refused while the front drains, and authorized for what it calls. And who a request
 * comes from, which every session is bound to.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { isRequest } from '../protocol/message-kind.js';
import type { AuthRefusal, FrontAuth } from './auth/index.js';
import { rpcError, sendJson } from './replies.js';
import { readJsonBody, refuse } from './request-body.js';

/** What the checks need of the front. */
export interface PostChecks {
  /** The front is shutting down: a request is refused (stopTaking). */
  draining: boolean;
  auth: FrontAuth | undefined;
  /** The front's own URL (the resource tokens name). */
  frontUrl: string;
  /** Whether a batch may come (Streamable HTTP); HTTP+SSE takes one message per POST. */
  batches: boolean;
}

/** The POST's body, checked; undefined when a check failed, and its refusal was sent. */
export async function checkedBody(
  req: IncomingMessage & { auth?: AuthInfo },
  res: ServerResponse,
  checks: PostChecks,
): Promise<unknown> {
  const body = await readJsonBody(req, res);
  if (body === undefined) return undefined;
  // JSON that is not a JSON-RPC message is an Invalid Request (-32600), not a Parse error (the SDK's answer).
  const invalid =
    Array.isArray(body) && !checks.batches
      ? rpcError(-32600, 'Invalid Request: this transport takes one message per POST')
      : invalidRequest(body);
  if (invalid) {
    sendJson(res, 400, invalid);
    return undefined;
  }
  if (checks.draining && carriesRequest(body)) {
    res.setHeader('retry-after', '1');
    sendJson(res, 503, shuttingDown(body));
    return undefined;
  }
  const forbidden =
    req.auth && checks.auth?.authorize(req.auth, Array.isArray(body) ? body : [body], checks.frontUrl);
  if (forbidden) {
    refuseAuth(req, res, forbidden);
    return undefined;
  }
  return body;
}

/** Whether a POST body holds a request (a call, an initialize): what a front shutting down refuses. */
function carriesRequest(body: unknown): boolean {
  return (Array.isArray(body) ? body : [body]).some((m) => isRequest(m as JSONRPCMessage));
}

/** A front shutting down answers a request: nothing of it ran, and it may be sent again (another instance, or after the restart). */
export function shuttingDown(body: unknown) {
  const id = Array.isArray(body) ? undefined : (body as { id?: RequestId } | undefined)?.id;
  return rpcError(
    -32000,
    'Service unavailable: this server is shutting down; nothing of this request was run. Send it again (the server restarts, or another instance answers).',
    id ?? null,
  );
}

/** Whether a POST body holds a request other than the handshake: the session is in use. */
export function requestsBeyondHandshake(body: unknown): boolean {
  return (Array.isArray(body) ? body : [body]).some(
    (m) => isRequest(m as JSONRPCMessage) && (m as { method: string }).method !== 'initialize',
  );
}

/**
 * Who a request comes from, as far as the front can tell: the actor its token
 * names (one subject's new token still owns its sessions), '' without auth.
 */
export function ownerOf(auth: AuthInfo | undefined): string {
  const actor = (auth?.extra as { actor?: unknown } | undefined)?.actor;
  return auth ? `token:${typeof actor === 'string' ? actor : auth.clientId}` : '';
}

/** 401/403/503 from the auth, with its WWW-Authenticate challenge (and Retry-After for a 503 that knows when). */
export function refuseAuth(req: IncomingMessage, res: ServerResponse, refusal: AuthRefusal): void {
  if (refusal.challenge) res.setHeader('www-authenticate', refusal.challenge);
  if (refusal.retryAfterSeconds) res.setHeader('retry-after', String(refusal.retryAfterSeconds));
  refuse(req, res, refusal.status, rpcError(refusal.status === 503 ? -32603 : -32001, refusal.message));
}

/** The JSON-RPC error for a body that is not a message or a non-empty batch of them; undefined if it is. */
function invalidRequest(body: unknown) {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  // An empty batch is invalid too.
  const bad =
    messages.length === 0 ? 0 : messages.findIndex((m) => !JSONRPCMessageSchema.safeParse(m).success);
  if (bad < 0) return undefined;
  // The request's own id when it can be read (so the client can match the error), else null.
  const id = (messages[bad] as { id?: unknown } | null | undefined)?.id;
  const usable = typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));
  return rpcError(-32600, 'Invalid Request: not a JSON-RPC 2.0 message', usable ? (id as RequestId) : null);
}
