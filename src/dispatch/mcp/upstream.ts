// Longer than most files (about 500 lines) on purpose: one upstream connection is one state
// machine — connect, negotiate the revision, send, restart with backoff — whose steps share its
// private state (transport, pending requests, what the handshake learned). Split, that state
// would have to be exposed. What is not that machine lives beside it (stdio-transport.ts) or in
// src/protocol/ (envelopes, standard headers).
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type InitializeResult,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCNotification,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import {
  messageOf,
  NotWrittenError,
  UpstreamClosedError,
  UpstreamInvalidReplyError,
  UpstreamUnavailableError,
} from '../../errors.js';
import {
  ENVELOPE,
  envelopeOf,
  LATEST_MODERN_VERSION,
  MODERN_VERSIONS,
  type ProtocolEra,
  withEnvelope,
  withoutEnvelope,
} from '../../protocol/eras.js';
import { type PerRequestHttp, withStandardHeaders } from '../../protocol/standard-headers.js';
import { StdioUpstreamTransport } from './stdio-transport.js';
import type { SkippedLine } from './stdout-lines.js';

/** Where an upstream MCP server is: a command speaking stdio, or a Streamable HTTP URL. */
export type UpstreamSpec =
  | {
      name: string;
      command: string;
      args?: string[];
      /** The upstream's environment; the SDK adds HOME, LOGNAME, PATH, SHELL, TERM and USER underneath. */
      env?: Record<string, string>;
      cwd?: string;
    }
  | { name: string; url: string; headers?: Record<string, string> };

export type UpstreamReply = JSONRPCResultResponse | JSONRPCErrorResponse;

export interface UpstreamHandlers {
  /** A request from the upstream to the client (sampling, elicitation, roots, ping). */
  onRequest(request: JSONRPCRequest): Promise<UpstreamReply>;
  /** A notification from the upstream (progress, logging, list_changed, resources/updated, cancelled). */
  onNotification(notification: JSONRPCNotification): void;
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
}

interface Pending {
  resolve(reply: UpstreamReply): void;
  reject(error: Error): void;
}

/**
 * One connection to an upstream MCP server, at the JSON-RPC message level so
 * that everything passes through faithfully. The gateway is the upstream's
 * client: it initializes it with the real client's parameters, renumbers
 * request ids into its own space, and restarts the upstream with backoff when
 * it exits.
 */
export class UpstreamConnection {
  readonly name: string;
  readonly #spec: UpstreamSpec;
  readonly #handlers: UpstreamHandlers;
  readonly #options: Required<Omit<UpstreamOptions, 'stderr'>> & Pick<UpstreamOptions, 'stderr'>;
  /** The revision family this connection speaks, once negotiated. */
  #era: ProtocolEra | undefined;
  /** What a failed modern probe taught: the upstream is 2025-era only (do not probe it again). */
  #legacyOnly = false;
  /** What a refused `initialize` taught: the upstream is 2026-07-28 only (ask it that way first). */
  #modernOnly = false;
  #transport: Transport | undefined;
  #nextId = 1;
  readonly #pending = new Map<RequestId, Pending>();
  /** What a request in flight adds to its own HTTP POST (its Mcp-Param-* headers, its stream's abort). */
  readonly #perRequestHttp = new Map<RequestId, PerRequestHttp>();
  #initializeParams: JSONRPCRequest['params'];
  #initializeResult: InitializeResult | undefined;
  #available = false;
  /** Connected but not yet initialized: only the initialize request may go out. */
  #initializing = false;
  #closed = false;
  #restartDelay: number;
  #restartTimer: NodeJS.Timeout | undefined;
  /** Calls waiting in `whenReady`: told when the upstream is available again, or closed for good. */
  readonly #readyWaiters = new Set<(error?: Error) => void>();
  /** How many times the upstream went down since it last served: the restart attempt being made. */
  #attempt = 0;
  /** Why it last went down: read when the restart is made, by which time the process's exit is known. */
  #down: { transport: Transport; error: Error | undefined } | undefined;
  /** Initialized and not lost since: a loss now is `down`, not `start_failed`. */
  #serving = false;

  constructor(spec: UpstreamSpec, handlers: UpstreamHandlers, options: UpstreamOptions = {}) {
    this.name = spec.name;
    this.#spec = spec;
    this.#handlers = handlers;
    this.#options = {
      restartDelayMs: options.restartDelayMs ?? 250,
      maxRestartDelayMs: options.maxRestartDelayMs ?? 10_000,
      stderr: options.stderr,
      prefer: options.prefer ?? 'legacy',
    };
    this.#restartDelay = this.#options.restartDelayMs;
  }

  /** True while requests can be sent (connected and initialized). */
  get available(): boolean {
    return this.#available && !this.#initializing;
  }

  /** It went away and is being restarted (true from then until a restart has served its handshake). */
  get down(): boolean {
    return !this.#closed && (this.#restartTimer !== undefined || this.#attempt > 0);
  }

  /**
   * What the upstream said about itself: its `initialize` answer, or, for a
   * 2026-07-28 upstream, its `server/discover` answer in that shape.
   */
  get initializeResult(): InitializeResult | undefined {
    return this.#initializeResult;
  }

  get era(): ProtocolEra | undefined {
    return this.#era;
  }

  /**
   * Connects and initializes with the client's own initialize parameters.
   * When that fails, it rejects and the connection keeps trying, with
   * backoff, as after a crash (`close()` stops it): an upstream that is down
   * at start comes up when it can.
   */
  async start(initializeParams: JSONRPCRequest['params']): Promise<InitializeResult> {
    this.#initializeParams = initializeParams;
    try {
      await this.#connect();
    } catch (error) {
      this.#retryAfterFailedStart(error);
      throw error;
    }
    return this.#initializeResult as InitializeResult;
  }

  /** Resolves when the upstream is (again) available, or rejects after `timeoutMs` (or once it is closed). */
  whenReady(timeoutMs: number): Promise<void> {
    if (this.available) return Promise.resolve();
    if (this.#closed) return Promise.reject(new UpstreamUnavailableError(`upstream ${this.name} is closed`));
    return new Promise<void>((resolve, reject) => {
      const waiter = (error?: Error) => {
        clearTimeout(timer);
        this.#readyWaiters.delete(waiter);
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(
        () => waiter(new UpstreamUnavailableError(`upstream ${this.name} is down`)),
        timeoutMs,
      );
      this.#readyWaiters.add(waiter);
    });
  }

  /**
   * Sends a request and resolves with the upstream's reply (result or error).
   * Throws UpstreamUnavailableError if it could not be sent (nothing
   * happened), UpstreamClosedError if the upstream went away before replying
   * (it may have acted).
   */
  async request(
    method: string,
    params: JSONRPCRequest['params'],
    signal?: AbortSignal,
    /** Called with the upstream-side id once sent, so a client's cancellation can be passed on. */
    onSent?: (upstreamId: RequestId) => void,
    /** Headers of this request's own POST, for an HTTP upstream (SEP-2243 `Mcp-Param-*`). */
    headers?: Record<string, string>,
  ): Promise<UpstreamReply> {
    const transport = this.#transport;
    const handshake = method === 'initialize' || method === 'server/discover';
    const allowed = this.available || (this.#initializing && this.#available && handshake);
    if (!allowed || !transport) throw new UpstreamUnavailableError(`upstream ${this.name} is down`);
    params = this.#forEra(method, params);
    const id = this.#nextId++;
    const reply = new Promise<UpstreamReply>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    // The upstream may go away while the request is still being written: then `reply` is rejected
    // before anyone awaits it, and an unobserved rejection would end the gateway process.
    reply.catch(() => {});
    if (headers || signal)
      this.#perRequestHttp.set(id, { ...(headers ? { headers } : {}), ...(signal ? { signal } : {}) });
    void reply.finally(() => this.#perRequestHttp.delete(id)).catch(() => {});
    try {
      await transport.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
    } catch (error) {
      this.#pending.delete(id);
      this.#perRequestHttp.delete(id);
      if (neverDelivered(error))
        throw new UpstreamUnavailableError(`could not send to upstream ${this.name}: ${messageOf(error)}`);
      throw new UpstreamClosedError(
        `upstream ${this.name} failed while the request was being delivered: ${messageOf(error)}`,
      );
    }
    onSent?.(id);
    if (signal) {
      // Cancelled: the upstream is told (over HTTP its request stream is closed too, which is how a
      // 2026-07-28 server hears it), and no answer is awaited any more.
      const cancel = () => {
        void this.notify('notifications/cancelled', {
          requestId: id,
          reason: String(signal.reason ?? 'cancelled'),
        });
        const pending = this.#pending.get(id);
        this.#pending.delete(id);
        pending?.resolve({ jsonrpc: '2.0', id, error: { code: -32800, message: 'Request cancelled' } });
      };
      if (signal.aborted) cancel();
      else signal.addEventListener('abort', cancel, { once: true });
    }
    return reply;
  }

  /** Who the gateway speaks for on this connection: the client's initialize parameters (or the gateway's own). */
  get #client(): {
    capabilities?: Record<string, unknown>;
    clientInfo?: { name?: string; version?: string };
  } {
    return (this.#initializeParams ?? {}) as {
      capabilities?: Record<string, unknown>;
      clientInfo?: { name?: string; version?: string };
    };
  }

  /**
   * A request's params as this upstream's revision wants them: a 2026-07-28
   * upstream gets the envelope on every request (the client's own when it
   * sent one, else the gateway's, naming the client that initialized it); a
   * 2025-era upstream never sees one.
   */
  #forEra(method: string, params: JSONRPCRequest['params']): JSONRPCRequest['params'] {
    if (method === 'initialize' || method === 'server/discover') return params;
    if (this.#era !== 'modern') return withoutEnvelope(params);
    const init = this.#client;
    const own = envelopeOf(params);
    return withEnvelope(params, {
      protocolVersion: this.#initializeResult?.protocolVersion ?? LATEST_MODERN_VERSION,
      clientCapabilities: own.clientCapabilities ?? init?.capabilities ?? {},
      ...(init?.clientInfo ? { clientInfo: init.clientInfo } : {}),
    });
  }

  async notify(method: string, params?: JSONRPCNotification['params']): Promise<void> {
    if (!this.#available || !this.#transport) return;
    await this.#transport.send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) }).catch(() => {});
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#available = false;
    clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    const transport = this.#transport;
    this.#transport = undefined;
    this.#failPending(new UpstreamClosedError(`upstream ${this.name} closed`));
    for (const waiter of [...this.#readyWaiters])
      waiter(new UpstreamUnavailableError(`upstream ${this.name} is closed`));
    await transport?.close().catch(() => {});
  }

  #connect(): Promise<void> {
    return (async () => {
      await this.#negotiate(await this.#open());
      this.#initializing = false;
      this.#restartDelay = this.#options.restartDelayMs;
      this.#serving = true;
      this.#report({
        kind: 'started',
        pid:
          this.#transport instanceof StdioUpstreamTransport ? (this.#transport.pid ?? undefined) : undefined,
        era: this.#era ?? 'legacy',
        attempt: this.#attempt,
      });
      this.#attempt = 0;
      for (const waiter of [...this.#readyWaiters]) waiter();
    })().catch((error: unknown) => {
      this.#available = false;
      this.#initializing = false;
      throw error;
    });
  }

  /** A new transport (a new process, for stdio), started, and only the handshake allowed through. */
  async #open(): Promise<Transport> {
    const transport = this.#createTransport();
    this.#transport = transport;
    transport.onmessage = (message) => this.#receive(transport, message);
    transport.onclose = () => this.#lost(transport, undefined);
    transport.onerror = (error) => {
      // HTTP transports report failed requests here without closing: only a closed transport is "down".
      if (transport instanceof StdioUpstreamTransport) this.#lost(transport, error);
    };
    await transport.start();
    this.#available = true;
    this.#initializing = true;
    return transport;
  }

  /** Drops a connection that may not be used again (its revision is pinned) for a new one. */
  async #reopen(transport: Transport): Promise<Transport> {
    this.#transport = undefined;
    await transport.close().catch(() => {});
    return this.#open();
  }

  /**
   * Finds the revision to speak, in the order the connection prefers: a
   * 2025-era upstream answers `initialize`; a 2026-07-28 one answers
   * `server/discover` (and may refuse `initialize`). What is learned is kept:
   * a restart asks the way that worked.
   */
  async #negotiate(transport: Transport): Promise<void> {
    const modernFirst = (this.#options.prefer === 'modern' || this.#modernOnly) && !this.#legacyOnly;
    if (modernFirst) {
      try {
        if (await this.#discover(transport)) return;
      } catch (error) {
        // It went away on the probe (some 2025-era servers exit on a method they do not know).
        if (!(error instanceof UpstreamClosedError)) throw error;
        transport = await this.#reopen(transport);
      }
    }
    let refusal: string;
    try {
      const init = await this.request('initialize', this.#initializeParams);
      if (!('error' in init)) {
        this.#era = 'legacy';
        this.#initializeResult = init.result as InitializeResult;
        transport.setProtocolVersion?.(this.#initializeResult.protocolVersion);
        await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        return;
      }
      refusal = init.error.message;
    } catch (error) {
      // A 2026-07-28-only server over HTTP refuses initialize with an HTTP error.
      if (!(error instanceof UpstreamUnavailableError)) throw error;
      refusal = error.message;
    }
    if (!modernFirst) {
      // The opening message pins a stdio connection's revision: ask again on a fresh one.
      if (await this.#discover(await this.#reopen(transport))) {
        this.#modernOnly = true;
        return;
      }
    }
    throw new Error(`upstream ${this.name} refused initialize: ${refusal}`);
  }

  /** Asks the upstream `server/discover`; true if it speaks a 2026-07-28 revision the gateway does. */
  async #discover(transport: Transport): Promise<boolean> {
    let reply: UpstreamReply;
    try {
      const init = this.#client;
      reply = await this.request(
        'server/discover',
        withEnvelope(undefined, {
          protocolVersion: LATEST_MODERN_VERSION,
          clientCapabilities: init?.capabilities ?? {},
          clientInfo: init?.clientInfo ?? { name: 'idem-gateway', version: '0' },
        }),
      );
    } catch (error) {
      // Refused over HTTP: a 2025-era server.
      if (error instanceof UpstreamUnavailableError) {
        this.#legacyOnly = true;
        return false;
      }
      // Gone (some servers exit on a method they do not know): the same, and the restart must not probe again.
      if (error instanceof UpstreamClosedError) this.#legacyOnly = true;
      throw error;
    }
    const result = 'result' in reply ? (reply.result as Record<string, unknown>) : undefined;
    const versions = Array.isArray(result?.supportedVersions) ? (result.supportedVersions as unknown[]) : [];
    const version = MODERN_VERSIONS.find((v) => versions.includes(v));
    if (!result || !version) {
      this.#legacyOnly = true;
      return false;
    }
    this.#era = 'modern';
    const meta = result._meta as Record<string, unknown> | undefined;
    this.#initializeResult = {
      protocolVersion: version,
      capabilities: (result.capabilities ?? {}) as InitializeResult['capabilities'],
      serverInfo: (meta?.[ENVELOPE.serverInfo] as InitializeResult['serverInfo'] | undefined) ?? {
        name: this.name,
        version: '',
      },
      ...(typeof result.instructions === 'string' ? { instructions: result.instructions } : {}),
    };
    transport.setProtocolVersion?.(version);
    return true;
  }

  #createTransport(): Transport {
    const spec = this.#spec;
    if ('url' in spec) {
      return new StreamableHTTPClientTransport(new URL(spec.url), {
        ...(spec.headers ? { requestInit: { headers: spec.headers } } : {}),
        fetch: withStandardHeaders((id) => this.#perRequestHttp.get(id as RequestId)),
      });
    }
    return new StdioUpstreamTransport(
      {
        command: spec.command,
        args: spec.args ?? [],
        // Exactly this environment: the SDK adds only its safe few (HOME, PATH, …) underneath.
        ...(spec.env ? { env: spec.env } : {}),
        ...(spec.cwd ? { cwd: spec.cwd } : {}),
        stderr: this.#options.stderr ?? 'inherit',
      },
      (skipped) => this.#skipped(skipped),
    );
  }

  /**
   * A line that is not a message was skipped. When it is JSON shaped like an
   * answer to a request in flight (its id, a result or an error), that request
   * will get no other answer: it ends now, its outcome unknown.
   */
  #skipped(skipped: SkippedLine): void {
    try {
      this.#handlers.onSkippedLine?.(skipped);
    } catch {
      // Reporting a line must never stop the reading.
    }
    const value = skipped.value as { id?: unknown; result?: unknown; error?: unknown } | null | undefined;
    if (typeof value !== 'object' || value === null || !('result' in value || 'error' in value)) return;
    const id = value.id as RequestId;
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    pending.reject(
      new UpstreamInvalidReplyError(
        `upstream ${this.name} answered with a message that is not valid JSON-RPC; whether it acted is unknown`,
      ),
    );
  }

  #report(event: UpstreamLifecycle): void {
    try {
      this.#handlers.onLifecycle?.(event);
    } catch {
      // Reporting must never change what the connection does.
    }
  }

  #receive(transport: Transport, message: JSONRPCMessage): void {
    if (transport !== this.#transport) return;
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = (message as { id?: RequestId }).id;
      const pending = id === undefined ? undefined : this.#pending.get(id);
      if (pending && id !== undefined) {
        this.#pending.delete(id);
        pending.resolve(message as UpstreamReply);
      }
      return;
    }
    if (isJSONRPCRequest(message)) {
      const upstreamId = message.id;
      void this.#handlers
        .onRequest(message)
        .catch(
          (error: unknown): UpstreamReply => ({
            jsonrpc: '2.0',
            id: upstreamId,
            error: { code: -32603, message: `gateway could not relay the request: ${String(error)}` },
          }),
        )
        .then((reply) => transport.send({ ...reply, id: upstreamId } as JSONRPCMessage))
        .catch(() => {});
      return;
    }
    if (isJSONRPCNotification(message)) this.#handlers.onNotification(message);
  }

  #lost(transport: Transport, error: Error | undefined): void {
    if (transport !== this.#transport) return;
    this.#transport = undefined;
    this.#available = false;
    this.#failPending(
      new UpstreamClosedError(`upstream ${this.name} went away${error ? `: ${error.message}` : ''}`),
    );
    void transport.close().catch(() => {});
    const wasServing = this.#serving;
    this.#serving = false;
    if (this.#closed) return;
    this.#down = { transport, error };
    this.#report({
      kind: wasServing ? 'down' : 'start_failed',
      reason: this.#whyDown(),
      retryInMs: this.#scheduleRestart(),
    });
  }

  /** A first start failed: torn down like a crash (which retries), unless it already was. */
  #retryAfterFailedStart(error: unknown): void {
    if (this.#closed) return;
    const transport = this.#transport;
    if (transport) {
      this.#lost(transport, error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (this.#restartTimer !== undefined) return;
    this.#report({ kind: 'start_failed', reason: messageOf(error), retryInMs: this.#scheduleRestart() });
  }

  /**
   * One restart attempt at a time, with doubling delays: a crash-looping upstream is not hammered.
   * Returns the delay of the attempt scheduled (undefined: none, the connection is closed).
   */
  #scheduleRestart(): number | undefined {
    if (this.#closed) return undefined;
    if (this.#restartTimer !== undefined) return undefined;
    const delay = this.#restartDelay;
    this.#restartDelay = Math.min(this.#restartDelay * 2, this.#options.maxRestartDelayMs);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (this.#closed) return;
      this.#attempt++;
      try {
        this.#handlers.onRestart?.({ attempt: this.#attempt, delayMs: delay, reason: this.#whyDown() });
      } catch {
        // Reporting a restart must never stop it.
      }
      // A transport that started but failed to initialize is torn down like a crash (which schedules the next try).
      this.#connect().catch((error: unknown) => this.#retryAfterFailedStart(error));
    }, delay);
    this.#restartTimer.unref();
    return delay;
  }

  #whyDown(): string {
    const down = this.#down;
    const exit = down?.transport instanceof StdioUpstreamTransport ? down.transport.exitStatus : undefined;
    return exit ?? down?.error?.message ?? 'its connection closed';
  }

  #failPending(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/** Network errors that mean the connection was never made: the request cannot have arrived. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether a failed send provably delivered nothing. A stdio line that was not
 * completely written, a connection never made, and an HTTP 4xx (the server
 * refused the message) are "nothing happened"; anything else (a connection
 * that broke after the body left, a 5xx) may have reached the upstream.
 */
function neverDelivered(error: unknown): boolean {
  if (error instanceof NotWrittenError || error instanceof UnauthorizedError) return true;
  if (error instanceof StreamableHTTPError)
    return error.code !== undefined && error.code >= 400 && error.code < 500;
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === 'string' && NOT_CONNECTED.has(code);
}
