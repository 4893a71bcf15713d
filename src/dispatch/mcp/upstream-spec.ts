import type {
  JSONRPCErrorResponse,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResultResponse,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { KnownSecrets } from '../../identity/redaction.js';
import type { ProtocolEra } from '../../protocol/revisions.js';
import type { TrafficLog } from '../../protocol/traffic-log.js';
import type { StdioUpstreamTransport } from './stdio-transport.js';
import type { SkippedLine } from './stdout-lines.js';

/**
 * Where an upstream MCP server is: a command speaking stdio, or a URL (Streamable HTTP, or the
 * 2024-11-05 HTTP+SSE transport: `transport`, default found out). `name` is
 * the operator's handle for it; `server`, when the gateway computed it, what it IS
 * (identity/upstream-identity.ts: `srv_…`), which its calls' fingerprints name as their target.
 */
export type UpstreamSpec =
  | {
      name: string;
      server?: string;
      command: string;
      args?: string[];
      /** The upstream's environment; the SDK adds HOME, LOGNAME, PATH, SHELL, TERM and USER underneath. */
      env?: Record<string, string>;
      cwd?: string;
    }
  | {
      name: string;
      server?: string;
      url: string;
      headers?: Record<string, string>;
      transport?: HttpTransportKind;
    };

/**
 * Which HTTP transport an upstream URL speaks: Streamable HTTP, the 2024-11-05 HTTP+SSE transport
 * (GET an event stream, POST each message where its `endpoint` event says), or `auto`: found out on
 * the first message, as the SDK's client fallback does (http-transports.ts).
 */
export type HttpTransportKind = 'auto' | 'streamable_http' | 'sse';

export type UpstreamReply = JSONRPCResultResponse | JSONRPCErrorResponse;

/**
 * Who answers what the upstream asks (elicitation, sampling, roots) while one request of the
 * gateway's runs: the reply, or undefined to leave it to the connection's handlers (onRequest).
 */
export type UpstreamAsks = (request: JSONRPCRequest) => Promise<UpstreamReply> | undefined;

/** How one request to the upstream is sent, beside its method and params (UpstreamConnection.request). */
export interface RequestOptions {
  /**
   * Aborted: the upstream is told (`notifications/cancelled`; over 2026-07-28 HTTP its request
   * stream is closed too, which is how such a server hears it). Then no answer is awaited any more
   * (UpstreamClosedError) — unless `answerWithinMs` says how long one is still awaited.
   */
  signal?: AbortSignal;
  /** Once `signal` aborts, how long an answer the upstream sends all the same is still awaited. */
  answerWithinMs?: number;
  /**
   * Called with the upstream-side id as the request goes out, before it is written: what the
   * upstream sends about it (tied to this id) may arrive before the write returns, and a
   * client's cancellation is passed on under it.
   */
  onId?: (upstreamId: RequestId) => void;
  /** Headers of this request's own POST, for an HTTP upstream (SEP-2243 `Mcp-Param-*`). */
  headers?: Record<string, string>;
  /** What the upstream asks while this request runs, answered first by this (see UpstreamAsks). */
  asks?: UpstreamAsks;
}

/**
 * What the upstream sends of its own. `related` is the id (this connection's)
 * of the request whose response stream carried it: the upstream's own word
 * that it concerns that request (protocol/related-streams.ts). Null: the
 * upstream said it concerns none (an HTTP upstream's standalone stream).
 * Undefined: nothing can say (a stdio upstream; only a progress token ties
 * its messages to a request).
 */
export interface UpstreamHandlers {
  /** A request from the upstream to the client (sampling, elicitation, roots, ping). */
  onRequest(request: JSONRPCRequest, related?: RequestId | null): Promise<UpstreamReply>;
  /** A notification from the upstream (progress, logging, list_changed, resources/updated, cancelled). */
  onNotification(notification: JSONRPCNotification, related?: RequestId | null): void;
  /** Started, went down, or could not be started: for the operator's log. */
  onLifecycle?(event: UpstreamLifecycle): void;
  /** A restart is being attempted (after `delayMs`), because of `reason` (how it exited, or the error). */
  onRestart?(restart: UpstreamRestart): void;
  /** A stdio upstream wrote a line on stdout that is not a JSON-RPC message: it was skipped. */
  onSkippedLine?(skipped: SkippedLine): void;
}

/**
 * What happened to an upstream's connection. `down`: it served, then exited
 * or its connection closed; `start_failed`: it could not be spawned,
 * connected or initialized. Both are retried after `retryInMs` (undefined:
 * not retried, the connection is being closed).
 */
export type UpstreamLifecycle =
  | { kind: 'started'; pid: number | undefined; era: ProtocolEra; attempt: number }
  | { kind: 'down' | 'start_failed'; reason: string; retryInMs: number | undefined };

export interface UpstreamRestart {
  /** 1 for the first restart since the upstream last served, 2 for the next, and so on. */
  attempt: number;
  delayMs: number;
  reason: string;
}

export interface UpstreamOptions {
  /** Restart backoff: first delay and cap. */
  restartDelayMs?: number;
  maxRestartDelayMs?: number;
  /** stderr of stdio upstreams: inherit (default, visible to an operator) or ignore. */
  stderr?: 'inherit' | 'ignore' | 'pipe';
  /**
   * Which revision to try first. `legacy` (default): `initialize`, then
   * `server/discover` if the upstream refuses it (a 2026-07-28-only server).
   * `modern`: `server/discover` first, then `initialize` — for connections
   * that serve 2026-07-28 clients, so that what only that revision can say
   * (multi-round-trip input, cache hints) passes through unchanged.
   */
  prefer?: ProtocolEra;
  /**
   * A process of this upstream spawned ahead and held (StdioUpstreamTransport.hold), nothing sent
   * to it yet: asked once, for the first connect, which then uses it instead of spawning one.
   * Undefined (none to hand): the connection spawns its own. Restarts always spawn their own.
   */
  spare?: () => StdioUpstreamTransport | undefined;
  /**
   * The secrets Idem holds (credentials, known from start): scrubbed from every message the
   * upstream sends before anything (client, store, log) sees it, and from its stderr, which is
   * then relayed line by line instead of inherited.
   */
  secrets?: KnownSecrets;
  /** `--log-level debug`: every message to and from the upstream said on the log, one line each. */
  traffic?: TrafficLog;
}
