// The HTTP front's request handler is one ordered list of checks (path, Host/Origin, auth, session
// ownership, body, revision, receipts) that reads best top to bottom; its options are in
// http-options.ts, and what each check needs beyond a few lines lives beside it (auth/,
// post-checks, request-per-post, session-post-refusals, idle-sessions, session-table, event-store, replies,
// request-body; legacy-sse for the 2024-11-05 HTTP+SSE transport beside it).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { isInitializeRequest, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isRequest } from '../protocol/message-kind.js';
import type { AdmittingTransport } from '../receipts/receipt-transport.js';
import { BoundedEventStore } from './event-store.js';
import { answerProbe, READY, type Readiness } from './health.js';
import { defaultAllowedHosts, hostOriginRefusal, originsOf } from './host-origin.js';
import {
  DEFAULT_HTTP_TIMEOUTS,
  type HttpFrontOptions,
  type HttpTimeouts,
  type ServedHttp,
} from './http-options.js';
import { idleSweepIntervalMs, idleTimeouts } from './idle-sessions.js';
import {
  type LegacySseFront,
  type LegacySseRoute,
  legacySsePaths,
  type SseSession,
  serveLegacySse,
} from './legacy-sse.js';
import { NodeStreamableTransport } from './node-streamable.js';
import { checkedBody, ownerOf, type PostChecks, refuseAuth, requestsBeyondHandshake } from './post-checks.js';
import { rpcError, sendJson } from './replies.js';
import { refuse } from './request-body.js';
import { classifyEra, serveModernRequest } from './request-per-post.js';
import { legacyRefusal } from './session-post-refusals.js';
import {
  DEFAULT_SESSION_CAPS,
  type SessionCloseReason,
  SessionTable,
  type TableSession,
} from './session-table.js';

interface Session extends TableSession {
  http: NodeStreamableTransport;
  receipts: AdmittingTransport;
  /** Who opened it (the bearer principal; '' without auth): nobody else may use it. */
  owner: string;
}

/** What every session of the front has, whichever its transport. */
type SessionBase = Omit<Session, 'http'>;

/**
 * MCP over Streamable HTTP, with what a public-facing front needs around the
 * SDK transport: Host/Origin checks, bearer auth, body limits (request-body.ts), sessions with
 * resumability (or a stateless mode), and request receipts answered before
 * the SDK transport sees a resend (so the first request's stream is not
 * displaced).
 */
export async function serveHttpFront(options: HttpFrontOptions): Promise<ServedHttp> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/mcp';
  const timeouts = { ...DEFAULT_HTTP_TIMEOUTS, ...options.timeouts };
  const idle = idleTimeouts(options.sessionIdleTimeoutMs, options.unusedSessionTimeoutMs);
  const clock = options.clock ?? Date.now;
  const sessions = new SessionTable<Session | SseSession>({
    caps: { ...DEFAULT_SESSION_CAPS, ...options.sessionCaps },
    idle,
    clock,
    ...(options.onSessionClosed
      ? {
          onClosed: (s: Session | SseSession, reason: SessionCloseReason) =>
            options.onSessionClosed?.({ actor: s.actor, reason }),
        }
      : {}),
  });
  const closeIdleSessions = () => sessions.closeIdle();
  const sweepMs = idleSweepIntervalMs(idle);
  const reaper = sweepMs > 0 ? setInterval(closeIdleSessions, sweepMs) : undefined;
  reaper?.unref();
  let allowedHosts: Set<string> | undefined = options.allowedHosts
    ? new Set(options.allowedHosts)
    : undefined;
  // A page served from the gateway's own address is not a rebinding attack; any other origin is.
  const allowedOrigins = () => new Set(options.allowedOrigins ?? originsOf(allowedHosts ?? []));
  // Pages on the listed origins are browser clients: they get CORS (loaded only then).
  const cors = options.allowedOrigins
    ? (await import('./cors.js')).corsFor(options.allowedOrigins)
    : undefined;
  const ssePaths = options.sse ? legacySsePaths(path) : undefined;

  /** A session for this request; `admitted` when the caps already count it (an initialize). */
  const openSession = async (owner: string, admitted?: Session): Promise<Session> => {
    const session = admitted ?? newSession(owner, owner);
    session.http = new NodeStreamableTransport(
      options.stateless
        ? { sessionIdGenerator: undefined }
        : {
            sessionIdGenerator: () => randomUUID(),
            // Replay never crosses sessions: each has its own events.
            eventStore: new BoundedEventStore(
              options.eventsPerSession?.maxEvents,
              options.eventsPerSession?.maxBytes,
            ),
            onsessioninitialized: (id) => {
              sessions.identified(id, session);
            },
          },
    );
    session.receipts = options.wrap(session.http);
    try {
      session.served = (await options.attach(session.receipts)) ?? undefined;
    } catch (error) {
      sessions.forget(session, undefined);
      throw error;
    }
    const closed = session.receipts.onclose;
    session.receipts.onclose = () => {
      closed?.();
      sessions.forget(session, session.http.sessionId);
    };
    return session;
  };

  const newSession = (owner: string, actor: string): Session => newSessionBase(owner, actor) as Session;
  const newSessionBase = (owner: string, actor: string): SessionBase => {
    const session = { lastSeen: clock(), busy: 0, used: false, owner, actor } as SessionBase;
    session.close = () => void session.receipts?.close().catch(() => {});
    return session;
  };

  /** The session is busy until this response ends (a GET stream: until the client leaves). */
  const busyUntilDone = (session: Session | SseSession, res: ServerResponse) => {
    session.busy++;
    res.once('close', () => {
      session.busy--;
      session.lastSeen = clock();
    });
  };

  /** The front's own URL, known once it listens (before any request): the resource when none is configured. */
  let frontUrl = '';

  /** Set by stopTaking(): the process shuts down, and takes no new request. */
  let draining = false;
  const readiness = async (): Promise<Readiness> => {
    const state = options.readiness ? await options.readiness() : READY;
    return draining ? { ...state, ready: false, draining: true } : state;
  };

  const handle = async (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    const legacy = legacyRouteOf(pathname, ssePaths);
    const served = pathname === path || legacy !== undefined;
    if (!served && (await answerProbe(req.method, pathname, res, readiness))) return;
    const metadata = req.method === 'GET' ? options.auth?.wellKnown(pathname, frontUrl) : undefined;
    if (metadata !== undefined) {
      // Public by design (RFC 9728): clients in browsers read it from other origins.
      res.setHeader('access-control-allow-origin', '*');
      sendJson(res, 200, metadata);
      return;
    }
    if (!served) {
      refuse(req, res, 404, undefined);
      return;
    }
    const crossSite = allowedHosts && hostOriginRefusal(req.headers, allowedHosts, allowedOrigins());
    if (crossSite) {
      refuse(req, res, 403, rpcError(-32000, crossSite));
      return;
    }
    // Before auth: a browser's preflight never carries the token.
    if (cors && (await cors(req, res))) return;
    if (options.auth) {
      // Only the Authorization header carries a token: a query string's ends up in logs and proxies.
      const authentication = await options.auth.authenticate(req.headers.authorization, frontUrl);
      if ('refused' in authentication) {
        refuseAuth(req, res, authentication.refused);
        return;
      }
      req.auth = authentication.auth;
    }
    const owner = ownerOf(req.auth);
    if (legacy && legacySse) {
      await serveLegacySse(legacy, req, res, owner, legacySse);
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    const found = !options.stateless && typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    // An HTTP+SSE session's id is no Streamable HTTP session's.
    const existing = found && 'http' in found ? found : undefined;
    // Another actor's session does not exist for this caller (same answer as an unknown id).
    if (
      !options.stateless &&
      typeof sessionId === 'string' &&
      (existing === undefined || existing.owner !== owner)
    ) {
      refuse(req, res, 404, rpcError(-32001, 'Session not found'));
      return;
    }
    if (req.method !== 'POST') {
      if (!existing) {
        // GET/DELETE need a session; the SDK transport answers with the spec's error.
        const session = await openSession(owner);
        await session.http.serve(req, res);
        await discardUnlessInitialized(session);
        return;
      }
      busyUntilDone(existing, res);
      existing.used = true;
      endWhenTokenExpires(req, res);
      await existing.http.serve(req, res);
      return;
    }
    const body = await checkedBody(req, res, postChecks(true));
    if (body === undefined) return;
    // Which revision the request speaks decides everything after: 2026-07-28 has no sessions.
    const era = classifyEra(req, body);
    if (era.kind === 'reject') {
      sendJson(res, era.status, era.reply);
      return;
    }
    if (era.kind === 'modern') {
      await serveModernRequest(req, res, era, options.modern);
      return;
    }
    const refused = legacyRefusal(req, body, {
      required: !options.stateless,
      present: typeof sessionId === 'string',
    });
    if (refused) {
      sendJson(res, refused.status, refused.reply);
      return;
    }
    if (existing) busyUntilDone(existing, res);
    if (existing && requestsBeyondHandshake(body)) existing.used = true;
    let admitted: Session | undefined;
    // The schema only for what names itself an initialize: every other body would fail it anyway.
    if (
      !existing &&
      !options.stateless &&
      (body as { method?: unknown }).method === 'initialize' &&
      isInitializeRequest(body)
    ) {
      // Counted before anything starts (a gateway's upstream processes), so a cap holds.
      const clientName = body.params.clientInfo?.name;
      admitted = newSession(owner, options.sessionActorOf?.(req.auth, clientName) ?? owner);
      const full = sessions.admit(admitted);
      if (full) {
        sendJson(res, full.status, full.reply((body as unknown as { id: RequestId }).id));
        return;
      }
    }
    // `invalidRequest` applied the schema: from here on its shape tells a message's kind.
    const request = Array.isArray(body) ? undefined : (body as JSONRPCMessage);
    if (existing && request && isRequest(request)) {
      const admission = await existing.receipts.admit(request, req.auth ? { authInfo: req.auth } : undefined);
      if (admission.kind === 'answer') {
        sendJson(res, 200, admission.reply, existing.http.sessionId);
        return;
      }
      // Refused by the SDK transport (Accept, Content-Type, protocol version) or cut off before
      // it reached the server: nothing ran, so the receipt must not wait for a reply.
      res.once('close', () => existing.receipts.abandon(request.id));
    }
    const session = existing ?? (await openSession(owner, admitted));
    if (!existing) busyUntilDone(session, res);
    await session.http.serve(req, res, body);
    if (options.stateless) res.on('close', () => void session.receipts.close());
    else if (!existing) await discardUnlessInitialized(session);
  };

  /** What every POST is checked for (post-checks.ts), as of now. */
  const postChecks = (batches: boolean): PostChecks => ({
    draining,
    auth: options.auth,
    frontUrl,
    batches,
  });

  /** The 2024-11-05 HTTP+SSE transport, when served: its sessions in the same table, counted by the same caps. */
  const legacySse: LegacySseFront | undefined = ssePaths && {
    paths: ssePaths,
    sessions,
    draining: () => draining,
    postChecks: () => postChecks(false),
    newSession: (owner, auth) => newSessionBase(owner, options.sessionActorOf?.(auth, undefined) ?? owner),
    wrap: (transport) => options.wrap(transport),
    attach: (transport) => options.attach(transport),
    busyUntilDone: (session, res) => busyUntilDone(session, res),
    endWhenTokenExpires: (req, res) => endWhenTokenExpires(req, res),
  };

  // A GET stream is opened once and then only written to: without this, a token that expired (or
  // was not renewed) would go on receiving the session's messages for as long as the client
  // stays connected. At expiry the stream ends; the client opens it again with a fresh token
  // (Last-Event-ID resumes it), and the session itself lives on.
  const endWhenTokenExpires = (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse) => {
    const until = req.auth && options.auth?.acceptedUntil(req.auth);
    if (until === undefined) return;
    const timer = setTimeout(() => res.end(), Math.min(Math.max(0, until - clock()), 2 ** 31 - 1));
    res.once('close', () => clearTimeout(timer));
  };

  // A session opened for a request that did not initialize it (no session id, not an
  // initialize) is never reachable again: without this, every such request leaked one.
  const discardUnlessInitialized = async (session: Session) => {
    if (session.http.sessionId !== undefined) return;
    sessions.forget(session, undefined);
    await session.receipts.close().catch(() => {});
  };

  const serverOptions = {
    // Node refuses a headers timeout longer than the request's (0: no limit).
    headersTimeout:
      timeouts.requestMs > 0 ? Math.min(timeouts.headersMs, timeouts.requestMs) : timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    // Node checks the two above on this interval (default 30 s): short timeouts need it shorter.
    connectionsCheckingInterval: checkingInterval(timeouts),
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, rpcError(-32603, String(error)));
      else res.end();
    });
  };
  const server: Server = options.tls
    ? createHttpsServer({ ...serverOptions, ...options.tls }, onRequest)
    : createServer(serverOptions, onRequest);
  server.keepAliveTimeout = timeouts.idleMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  allowedHosts ??= new Set(defaultAllowedHosts(host, port));
  frontUrl = `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
  return {
    url: frontUrl,
    server,
    closeIdleSessions,
    stopTaking: () => {
      draining = true;
    },
    close: async () => {
      clearInterval(reaper);
      for (const session of [...sessions.values()]) await session.receipts.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Which path of the HTTP+SSE transport (legacy-sse.ts) this is, when the front serves it. */
function legacyRouteOf(
  pathname: string,
  paths: Record<LegacySseRoute, string> | undefined,
): LegacySseRoute | undefined {
  if (paths?.stream === pathname) return 'stream';
  if (paths?.messages === pathname) return 'messages';
  return undefined;
}

/** A quarter of the shortest timeout set, between 25 ms and 1 s. */
function checkingInterval(timeouts: HttpTimeouts): number {
  const set = [timeouts.headersMs, timeouts.requestMs].filter((ms) => ms > 0);
  return set.length === 0 ? 30_000 : Math.max(25, Math.min(1_000, Math.floor(Math.min(...set) / 4)));
}
