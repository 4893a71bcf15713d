import type { Server } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { HTTP_FRONT_DEFAULTS } from '../defaults.js';
import type { AdmittingTransport } from '../receipts/receipt-transport.js';
import type { FrontAuth } from './auth/index.js';
import type { Readiness } from './health.js';
import type { ServedSession, SessionCaps, SessionCloseReason } from './session-table.js';

// What the HTTP front (http.ts) is given, and what it hands back.

/** How long a connection may take, and sit idle (ms). */
export interface HttpTimeouts {
  /** From connect to the end of the request headers. */
  headersMs: number;
  /** From connect to the end of the request body: a body trickled in slower than this is cut off. */
  requestMs: number;
  /** A kept-alive connection with no request for this long is closed. */
  idleMs: number;
}

/**
 * Slow clients are cut off well before Node's defaults (60 s for headers,
 * 300 s for a request): an MCP request is small, and a held connection is
 * what a slow-body attack costs the server. Streams a response opens (SSE) are
 * not bounded by these: they carry their own keep-alive.
 */
export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = {
  headersMs: HTTP_FRONT_DEFAULTS.headersTimeoutMs,
  requestMs: HTTP_FRONT_DEFAULTS.requestTimeoutMs,
  idleMs: HTTP_FRONT_DEFAULTS.idleTimeoutMs,
};

export interface HttpFrontOptions {
  host?: string;
  port?: number;
  path?: string;
  /** No sessions: every POST stands alone (ids have no session scope). */
  stateless?: boolean;
  /**
   * Also serve the 2024-11-05 HTTP+SSE transport beside `path` (legacy-sse.ts): GET `sse` opens a
   * session's stream, POST `messages?sessionId=…` delivers its messages. Default off.
   */
  sse?: boolean;
  /** Host header values accepted (DNS-rebinding protection). Default: the listen address and localhost. */
  allowedHosts?: string[];
  /**
   * Origin header values accepted when present. Default: the gateway's own
   * allowed hosts (http/https). When set, these origins also get CORS (cors.ts).
   */
  allowedOrigins?: string[];
  /** Serve HTTPS with this certificate chain and key (PEM); undefined = plain HTTP. */
  tls?: { cert: Buffer; key: Buffer };
  /** Static bearer and/or OAuth (src/front/auth): undefined = no auth required. */
  auth?: FrontAuth;
  /**
   * A session with nothing in progress and no request for this long is closed
   * (clients seldom send DELETE). Default 10 minutes; 0 keeps sessions until
   * DELETE or shutdown.
   */
  sessionIdleTimeoutMs?: number;
  /** The same for a session that never got a request past the handshake. Default 1 minute (at most the idle timeout). */
  unusedSessionTimeoutMs?: number;
  /** Open sessions at most, in all and per actor; see DEFAULT_SESSION_CAPS. */
  sessionCaps?: Partial<SessionCaps>;
  /** The actor a new session will have (the caps count per actor). Default: the bearer principal. */
  sessionActorOf?(auth: AuthInfo | undefined, clientName: string | undefined): string;
  /** A session was closed by the front (idle, or evicted to make room under a cap). */
  onSessionClosed?(closed: { actor: string; reason: SessionCloseReason }): void;
  /** The clock sessions' idleness is judged by (ms). Default: Date.now; tests inject one to expire a session without waiting. */
  clock?: () => number;
  /** Connection timeouts; see DEFAULT_HTTP_TIMEOUTS. */
  timeouts?: Partial<HttpTimeouts>;
  /** Bounds of each session's replay buffer (events for `Last-Event-ID`). */
  eventsPerSession?: { maxEvents?: number; maxBytes?: number };
  /** What `/readyz` reports (health.ts); without it, ready whenever the process answers. */
  readiness?: () => Promise<Readiness>;
  /** Puts receipts around the transport (layer 1). */
  wrap(transport: Transport): AdmittingTransport;
  /** Connects whatever serves the session (an McpServer, a gateway session) to it. */
  attach(transport: AdmittingTransport): Promise<ServedSession | undefined>;
  /**
   * Serves one 2026-07-28 request (no session): receipts around its transport
   * (ids without session scope) and whatever answers it. Without this, such
   * requests are refused as an unsupported revision.
   */
  modern?: {
    wrap(transport: Transport): AdmittingTransport;
    attach(transport: AdmittingTransport): Promise<void>;
  };
}

export interface ServedHttp {
  url: string;
  server: Server;
  /** Closes the sessions idle by now (see idle-sessions.ts) and says how many; a timer calls it too. */
  closeIdleSessions(): number;
  /**
   * Shutting down: from now on a POST that carries a request (a call, a new session) is answered
   * 503 with Retry-After — nothing of it runs — while what serves the calls under way (a response
   * to the server's request, a notification, a GET stream) still passes; `/readyz` says 503.
   */
  stopTaking(): void;
  close(): Promise<void>;
}
