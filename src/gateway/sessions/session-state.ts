import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ClientCapabilities, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type {
  StdioUpstreamTransport,
  UpstreamConnection,
  UpstreamLifecycle,
  UpstreamReply,
  UpstreamRestart,
  UpstreamSpec,
} from '../../dispatch/mcp/index.js';
import type { SkippedLine } from '../../dispatch/mcp/stdout-lines.js';
import type { ExecutionEngine } from '../../executions/engine.js';
import type { InFlight } from '../../executions/in-flight.js';
import type { CallerInfo } from '../../identity/actor.js';
import type { KnownSecrets } from '../../identity/redaction.js';
import { renderRequestId } from '../../identity/request-key.js';
import { isErrorResponse, isResponse, isResultResponse } from '../../protocol/message-kind.js';
import { envelopeOf, legacyResult } from '../../protocol/revisions.js';
import type { TrafficLog } from '../../protocol/traffic-log.js';
import type { ToolCatalog } from '../catalog/catalog.js';
import type { InputRound } from '../revisions/input-round.js';
import type { CallSession, ClientRevision, ForwardedRequest } from '../tool-calls/call-context.js';
import type { SubscriptionHub } from './subscription-hub.js';

export interface SessionContext {
  engine: ExecutionEngine;
  /** Each tools/call until its answer is sent: a gateway shutting down waits for them (shutdown.ts). */
  calls?: InFlight;
  upstreams: UpstreamSpec[];
  newCatalog(): ToolCatalog;
  statusTool: string;
  actorOf(info: CallerInfo): string;
  /** The scopes a call of `tool` needs that the caller's token lacks (the front's rule; none without OAuth). */
  scopesMissing?(auth: AuthInfo | undefined, tool: string): string[];
  version: string;
  /** How long a call waits for a restarting upstream before answering IDEM_NOT_EXECUTED. */
  upstreamWaitMs: number;
  /** An upstream of this session (null: of the shared upstreams) is being restarted. */
  onUpstreamRestart?(
    restart: UpstreamRestart & { upstream: string; session: string | null; actor: string | null },
  ): void;
  /** An upstream started, went down or could not be started (session null: a shared connection). */
  onUpstreamLifecycle?(upstream: string, session: string | null, event: UpstreamLifecycle): void;
  /** A client's initialize was refused: no upstream could be started, and nothing else serves. */
  onInitializeRefused?(session: string | null, reason: string): void;
  /** An upstream wrote a stdout line that is not JSON-RPC; it was skipped. */
  onUpstreamSkippedLine?(upstream: string, session: string | null, skipped: SkippedLine): void;
  upstreamStderr?: 'inherit' | 'ignore' | 'pipe';
  /** The credentials' values: scrubbed from everything an upstream sends (UpstreamOptions.secrets). */
  secrets?: KnownSecrets;
  /** `--log-level debug`: every upstream message said on the log (UpstreamOptions.traffic). */
  traffic?: TrafficLog;
  /**
   * The config names a tool (a scope, an approval) that no upstream publishes: the gateway is
   * stopping and serves no tool meanwhile, since the tool meant may run unprotected.
   */
  configFault?(): Error | undefined;
  /** A request failed inside the gateway and was answered with an internal error: for the operator's log. */
  onRequestFailed?(method: string, error: unknown): void;
  /**
   * Stateless fronts: every request is a session of its own, so they all use
   * these upstream connections and this catalog, initialized once by the gateway.
   */
  shared?: SharedUpstreams;
  /**
   * The shared upstreams, for a session whose client turns out to speak
   * 2026-07-28 (no initialize, so nothing of its own to start).
   */
  sharedUpstreams?(): Promise<SharedUpstreams>;
  /** Upstreams configured `share: true`: sessions use one gateway-wide connection to each (pooled-upstreams.ts). */
  pooled?: ReadonlySet<string>;
  /** Those connections, started on first use. */
  pooledUpstreams?(): Promise<SharedUpstreams>;
  /**
   * A process of this stdio upstream started ahead (upstream-spares.ts), for a stateful session's
   * own connection to take; undefined: none waiting, the connection spawns one.
   */
  spareFor?(spec: UpstreamSpec): StdioUpstreamTransport | undefined;
}

export interface SharedUpstreams {
  upstreams: Map<string, UpstreamConnection>;
  catalog: ToolCatalog;
  /**
   * The sessions using these connections now: what an upstream sends about a
   * request (progress, log messages) is routed to the one it belongs to.
   */
  sessions: Set<SessionState>;
  /** Progress tokens are renamed on the way up, so two clients' tokens never collide here. */
  nextProgressToken: number;
  /** The 2026-07-28 clients' open `subscriptions/listen` streams (gateway/subscriptions.ts). */
  subscriptions: SubscriptionHub;
  /** Calls of 2026-07-28 clients to 2025-era upstreams, open while they run, by `requestState` (revisions/input-rounds.ts). */
  rounds: Map<string, InputRound>;
}

/**
 * What one client session holds, shared by the steps that serve it
 * (initialize, tools/list, tools/call, forwarding): the front transport, the
 * upstream connections, the catalog, the requests in flight, and the one way
 * to answer the client.
 */
export class SessionState implements CallSession {
  readonly ctx: SessionContext;
  readonly front: Transport;
  readonly upstreams: Map<string, UpstreamConnection>;
  catalog: ToolCatalog;
  /** The gateway-wide connections this session uses instead of its own (stateless, 2026-07-28). */
  shared: SharedUpstreams | undefined;
  /** The gateway-wide connections to the upstreams configured `share: true`, beside this session's own. */
  pool: SharedUpstreams | undefined;
  /**
   * What differs for the client's generation of MCP (revisions/client-revision.ts), known from
   * its first request: LEGACY after `initialize`, MODERN from a 2026-07-28 request on.
   */
  revision: ClientRevision | undefined;
  /**
   * The client's requests not answered yet, by rendered id, with their method: a modern
   * answer's shape depends on it, and one whose handling fails is answered all the same
   * (session.ts). An entry goes when the request's answer is sent.
   */
  readonly awaitingReply = new Map<string, string>();
  /** Client requests in flight, by rendered front id. */
  readonly inFlight = new Map<string, ForwardedRequest>();
  /** Requests we sent to the client on an upstream's behalf, by our front id. */
  readonly toClient = new Map<RequestId, (reply: UpstreamReply) => void>();
  /** This client's open listen streams, by rendered id: ended when the session closes. */
  readonly subscriptions = new Map<string, AbortController>();
  nextFrontId = 1;
  /**
   * The client's requests being handled, and tool calls still running on an upstream (also
   * those whose caller was already answered, past the contract's timeout): while any is, the
   * HTTP front never closes the session as idle or to make room — that would lose its outcome.
   */
  working = 0;
  clientInfo: CallerInfo = {};
  /** What the client declared in initialize (elicitation decides who approves: sessions/elicitation.ts). */
  clientCapabilities: ClientCapabilities | undefined;
  initialized = false;
  initializing = false;
  closed = false;
  /** Aborted when the session closes: what waits on the session's behalf (task watches, tasks/result) ends. */
  readonly ending = new AbortController();
  /**
   * Upstreams that were not serving when initialize was answered: their tools
   * were not announced, so when one comes up the client is told to list again
   * (the session then announced `tools.listChanged`).
   */
  readonly lateUpstreams = new Set<string>();

  constructor(ctx: SessionContext, front: Transport) {
    this.ctx = ctx;
    this.front = front;
    this.upstreams = new Map(ctx.shared?.upstreams);
    this.catalog = ctx.shared?.catalog ?? ctx.newCatalog();
    this.shared = ctx.shared;
    ctx.shared?.sessions.add(this);
    // Without sessions there is no handshake per request: the shared upstreams are already initialized.
    this.initialized = ctx.shared !== undefined;
  }

  /** Takes the gateway's shared upstream connections (a 2026-07-28 client: nothing to initialize). */
  adopt(shared: SharedUpstreams): void {
    this.shared = shared;
    for (const [name, upstream] of shared.upstreams) this.upstreams.set(name, upstream);
    this.catalog = shared.catalog;
    shared.sessions.add(this);
    this.initialized = true;
  }

  /**
   * Registers a client request being served, with what the upstream's
   * messages about it are matched by: its progress token (renamed on shared
   * connections, where two clients may pick the same one) and, for a
   * 2026-07-28 request, the log level it asked for.
   */
  track(
    frontId: RequestId,
    upstream: string,
    meta: Record<string, unknown> | undefined,
    cancellable: boolean,
  ): ForwardedRequest {
    const forwarded: ForwardedRequest = {
      frontId,
      upstream,
      ...(cancellable ? { cancelled: new AbortController() } : {}),
    };
    const token = meta?.progressToken;
    const shared = this.sharedFor(upstream);
    if (typeof token === 'string' || typeof token === 'number') {
      forwarded.progressToken = token;
      if (shared) forwarded.upstreamProgressToken = `idem-progress-${shared.nextProgressToken++}`;
    }
    const level = envelopeOf({ _meta: meta }).logLevel;
    if (level) forwarded.logLevel = level;
    forwarded.upstreamMeta =
      meta && forwarded.upstreamProgressToken !== undefined
        ? { ...meta, progressToken: forwarded.upstreamProgressToken }
        : meta;
    this.inFlight.set(renderRequestId(frontId), forwarded);
    return forwarded;
  }

  /** The gateway-wide connections `upstream` is reached through, if it is not this session's own. */
  sharedFor(upstream: string): SharedUpstreams | undefined {
    return this.shared ?? (this.ctx.pooled?.has(upstream) ? this.pool : undefined);
  }

  /** Whether this session's connection to `upstream` is its own (closed with it). */
  owns(upstream: string): boolean {
    return !this.shared && !this.ctx.pooled?.has(upstream);
  }

  /** Leaves the shared connections (the session is closing). */
  release(): void {
    this.shared?.sessions.delete(this);
    this.pool?.sessions.delete(this);
  }

  get ended(): AbortSignal {
    return this.ending.signal;
  }

  get id(): string | null {
    return this.front.sessionId ?? null;
  }

  /** On the gateway's shared connections (stateless, 2026-07-28) there is no session to ask a client in. */
  get canAsk(): boolean {
    return !this.shared;
  }

  get rounds(): Map<string, InputRound> | undefined {
    return this.shared?.rounds;
  }

  get upstreamWaitMs(): number {
    return this.ctx.upstreamWaitMs;
  }

  get statusTool(): string {
    return this.ctx.statusTool;
  }

  scopesMissing(auth: AuthInfo | undefined, tool: string): string[] {
    return this.ctx.scopesMissing?.(auth, tool) ?? [];
  }

  untrack(frontId: RequestId): void {
    this.inFlight.delete(renderRequestId(frontId));
  }

  dispatching(): () => void {
    this.working++;
    return () => {
      this.working--;
    };
  }

  failed(what: string, error: unknown): void {
    this.ctx.onRequestFailed?.(what, error);
  }

  /**
   * Sends a request of the gateway's own to the client and waits for its reply,
   * at most `timeoutMs`; undefined if none came (the session closed, the call it
   * belongs to was cancelled, or time ran out). The id space is the one requests
   * from upstreams use, so replies route the same way.
   */
  async ask(
    method: string,
    params: Record<string, unknown>,
    relatedTo: RequestId,
    cancelled: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<UpstreamReply | undefined> {
    if (this.closed || cancelled?.aborted) return undefined;
    const id = `idem-${this.nextFrontId++}`;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const reply = new Promise<UpstreamReply | undefined>((resolve) => {
      this.toClient.set(id, resolve);
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      timer.unref();
      onAbort = () => resolve(undefined);
      cancelled?.addEventListener('abort', onAbort, { once: true });
    });
    await this.send({ jsonrpc: '2.0', id, method, params }, relatedTo);
    try {
      return await reply;
    } finally {
      clearTimeout(timer);
      if (onAbort) cancelled?.removeEventListener('abort', onAbort);
      this.toClient.delete(id);
    }
  }

  get prefixed(): boolean {
    return this.ctx.upstreams.length > 1;
  }

  actor(): string {
    return this.ctx.actorOf(this.clientInfo);
  }

  reply(id: RequestId, result: unknown): Promise<void> {
    return this.send({ jsonrpc: '2.0', id, result } as JSONRPCMessage);
  }

  replyError(id: RequestId, code: number, message: string): Promise<void> {
    return this.send({ jsonrpc: '2.0', id, error: { code, message } });
  }

  async send(message: JSONRPCMessage, relatedRequestId?: RequestId): Promise<void> {
    if (this.closed) return;
    message = this.#forClientRevision(message);
    const id = (message as { id?: RequestId }).id;
    const related = relatedRequestId ?? (isResponse(message) ? id : undefined);
    try {
      await this.front.send(message, related !== undefined ? { relatedRequestId: related } : undefined);
    } catch (error) {
      this.front.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * A result in the shape the client's revision reads: a 2026-07-28 client
   * needs `resultType` (and cache hints on lists), a 2025-era one must not
   * meet them (its upstream may speak 2026-07-28).
   */
  #forClientRevision(message: JSONRPCMessage): JSONRPCMessage {
    if (!isResultResponse(message) && !isErrorResponse(message)) return message;
    const key = renderRequestId(message.id as RequestId);
    const method = this.awaitingReply.get(key);
    this.awaitingReply.delete(key);
    if (!isResultResponse(message)) return message;
    const result = message.result as Record<string, unknown>;
    // Not known yet (a stateless 2025-era front's session, which has no initialize): 2025-era.
    const shaped = this.revision ? this.revision.result(method, result) : legacyResult(result);
    return { ...message, result: shaped } as JSONRPCMessage;
  }
}
