// One upstream connection is one state machine — connect, negotiate the revision, send, restart
// with backoff — whose steps share its private state (transport, pending requests, what the
// handshake learned). What is not that machine lives beside it: the shapes it is configured and
// reports with (upstream-spec.ts), whether a failed send delivered anything (delivery.ts), what
// each revision asks and answers (revision.ts), the transports (upstream-transport.ts).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  InitializeResult,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import {
  messageOf,
  UpstreamClosedError,
  UpstreamInvalidReplyError,
  UpstreamUnavailableError,
} from '../../errors.js';
import { isNotification, isRequest, isResponse } from '../../protocol/message-kind.js';
import { takeRelatedMark } from '../../protocol/related-streams.js';
import type { ProtocolEra } from '../../protocol/revisions.js';
import { neverDelivered } from './delivery.js';
import { speaksStreamableHttp } from './http-transports.js';
import { PendingRequests } from './pending-requests.js';
import { RestartBackoff } from './restart-backoff.js';
import { type ConnectingClient, isHandshake, paramsForEra, RevisionNegotiation } from './revision.js';
import { StdioUpstreamTransport } from './stdio-transport.js';
import { answeredIdOf, type SkippedLine } from './stdout-lines.js';
import type {
  RequestOptions,
  UpstreamHandlers,
  UpstreamLifecycle,
  UpstreamOptions,
  UpstreamReply,
  UpstreamSpec,
} from './upstream-spec.js';
import { createUpstreamTransport } from './upstream-transport.js';

/** How long a lost stdio process's exit status is waited for before its loss is reported: as long as the SDK's close waits before SIGTERM. */
const STDIO_EXIT_WAIT_MS = 2_000;

/**
 * One connection to an upstream MCP server, at the JSON-RPC message level so
 * that everything passes through faithfully. The gateway is the upstream's
 * client: it initializes it with the real client's parameters, renumbers
 * request ids into its own space, and restarts the upstream with backoff when
 * it exits.
 */
export class UpstreamConnection {
  readonly name: string;
  /** What the upstream is (UpstreamSpec.server), when the gateway computed it: its calls' target in their fingerprints. */
  readonly server: string | undefined;
  readonly #spec: UpstreamSpec;
  readonly #handlers: UpstreamHandlers;
  /** `spare`: a process spawned ahead, for the first connect (UpstreamOptions.spare); asked once, then dropped. */
  readonly #options: Required<Omit<UpstreamOptions, 'stderr' | 'spare' | 'secrets' | 'traffic'>> &
    Pick<UpstreamOptions, 'stderr' | 'spare' | 'secrets' | 'traffic'>;
  /** Which revision this connection speaks, once negotiated, and what the upstream said in that handshake. */
  readonly #revision: RevisionNegotiation;
  #transport: Transport | undefined;
  readonly #pending = new PendingRequests();
  #initializeParams: JSONRPCRequest['params'];
  #available = false;
  /** Connected but not yet initialized: only the initialize request may go out. */
  #initializing = false;
  #closed = false;
  readonly #backoff: RestartBackoff;
  /** Calls waiting in `whenReady`: told when the upstream is available again, or closed for good. */
  readonly #readyWaiters = new Set<(error?: Error) => void>();
  /** Why it last went down: read when the restart is made, by which time the process's exit is known. */
  #down: { transport: Transport; error: Error | undefined } | undefined;
  /** Initialized and not lost since: a loss now is `down`, not `start_failed`. */
  #serving = false;

  constructor(spec: UpstreamSpec, handlers: UpstreamHandlers, options: UpstreamOptions = {}) {
    this.name = spec.name;
    this.server = spec.server;
    this.#spec = spec;
    this.#handlers = handlers;
    this.#options = {
      restartDelayMs: options.restartDelayMs ?? 250,
      maxRestartDelayMs: options.maxRestartDelayMs ?? 10_000,
      stderr: options.stderr,
      prefer: options.prefer ?? 'legacy',
      spare: options.spare,
      secrets: options.secrets,
      traffic: options.traffic,
    };
    this.#backoff = new RestartBackoff(this.#options.restartDelayMs, this.#options.maxRestartDelayMs);
    this.#revision = new RevisionNegotiation(spec.name, this.#options.prefer);
  }

  /** True while requests can be sent (connected and initialized). */
  get available(): boolean {
    return this.#available && !this.#initializing;
  }

  /** It went away and is being restarted (true from then until a restart has served its handshake). */
  get down(): boolean {
    return !this.#closed && this.#backoff.retrying;
  }

  /**
   * What the upstream said about itself: its `initialize` answer, or, for a
   * 2026-07-28 upstream, its `server/discover` answer in that shape.
   */
  get initializeResult(): InitializeResult | undefined {
    return this.#revision.server;
  }

  get era(): ProtocolEra | undefined {
    return this.#revision.era;
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
    return this.#revision.server as InitializeResult;
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
   * Sends a request and resolves with the upstream's reply (result or error). Throws
   * UpstreamUnavailableError if it could not be sent (nothing happened), UpstreamClosedError if the
   * upstream went away before replying (it may have acted), or its cancel ended the wait (RequestOptions).
   */
  async request(
    method: string,
    params: JSONRPCRequest['params'],
    { signal, answerWithinMs, onId, headers, asks }: RequestOptions = {},
  ): Promise<UpstreamReply> {
    const transport = this.#transport;
    const handshake = isHandshake(method);
    const allowed = this.available || (this.#initializing && this.#available && handshake);
    if (!allowed || !transport) throw new UpstreamUnavailableError(`upstream ${this.name} is down`);
    params = paramsForEra(method, params, this.#revision.era, this.#revision.server, this.client);
    // Over 2026-07-28 HTTP the cancel closes the request's stream (how such a server hears it), and
    // nothing can come after it; elsewhere an answer may still come, when the caller awaits one.
    const closesStream = this.#revision.era === 'modern' && speaksStreamableHttp(transport);
    const waitMs = closesStream ? undefined : answerWithinMs;
    const closes = signal && waitMs === undefined ? signal : undefined;
    const { id, reply } = this.#pending.open(
      headers || closes
        ? { ...(headers ? { headers } : {}), ...(closes ? { signal: closes } : {}) }
        : undefined,
      asks,
    );
    onId?.(id);
    try {
      await transport.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
    } catch (error) {
      this.#pending.forget(id);
      if (neverDelivered(error))
        throw new UpstreamUnavailableError(`could not send to upstream ${this.name}: ${messageOf(error)}`);
      throw new UpstreamClosedError(
        `upstream ${this.name} failed while the request was being delivered: ${messageOf(error)}`,
      );
    }
    const tell = (reason: string) => void this.notify('notifications/cancelled', { requestId: id, reason });
    if (signal) this.#pending.cancelOnAbort(id, signal, tell, waitMs);
    return reply;
  }

  /** Who the gateway speaks for on this connection (the client's initialize parameters, or the gateway's own). */
  get client(): ConnectingClient {
    return (this.#initializeParams ?? {}) as ConnectingClient;
  }

  async notify(method: string, params?: JSONRPCNotification['params']): Promise<void> {
    if (!this.#available || !this.#transport) return;
    await this.#transport.send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) }).catch(() => {});
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#available = false;
    this.#backoff.cancel();
    const transport = this.#transport;
    this.#transport = undefined;
    this.#pending.failAll(new UpstreamClosedError(`upstream ${this.name} closed`));
    for (const waiter of [...this.#readyWaiters])
      waiter(new UpstreamUnavailableError(`upstream ${this.name} is closed`));
    await transport?.close().catch(() => {});
  }

  #connect(): Promise<void> {
    return (async () => {
      await this.#revision.negotiate(await this.#open(), {
        request: (method, params) => this.request(method, params),
        reopen: (transport) => this.#reopen(transport),
        initializeParams: this.#initializeParams,
        client: this.client,
      });
      this.#initializing = false;
      const attempt = this.#backoff.served();
      this.#serving = true;
      this.#report({
        kind: 'started',
        pid:
          this.#transport instanceof StdioUpstreamTransport ? (this.#transport.pid ?? undefined) : undefined,
        era: this.#revision.era ?? 'legacy',
        attempt,
      });
      for (const waiter of [...this.#readyWaiters]) waiter();
    })().catch((error: unknown) => {
      this.#available = false;
      this.#initializing = false;
      throw error;
    });
  }

  /** A new transport (a new process, for stdio), started, and only the handshake allowed through. */
  async #open(): Promise<Transport> {
    const spare = this.#options.spare?.();
    this.#options.spare = undefined;
    const transport: Transport =
      spare ??
      createUpstreamTransport(
        this.#spec,
        this.#options.stderr,
        (id) => this.#pending.httpOf(id),
        (skipped) => this.#skipped(skipped),
        this.#options.secrets,
      );
    this.#transport = transport;
    transport.onmessage = (message) => this.#receive(transport, message);
    transport.onclose = () => this.#lost(transport, undefined);
    transport.onerror = (error) => {
      // HTTP transports report failed requests here without closing: only a closed transport is "down".
      if (transport instanceof StdioUpstreamTransport) this.#lost(transport, error);
    };
    this.#options.traffic?.tap(`upstream ${this.name}`).watch(transport);
    // A spare is already spawned: what it said while it waited comes now, to these handlers.
    if (spare) spare.release((skipped) => this.#skipped(skipped));
    else await transport.start();
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
   * A line that is not a message was skipped. When it is JSON shaped like an
   * answer to a request in flight (its id, a result or an error), that request
   * will get no other answer: it ends now, its outcome unknown.
   */
  #skipped(skipped: SkippedLine): void {
    this.#tell(() => this.#handlers.onSkippedLine?.(skipped));
    const answered = answeredIdOf(skipped);
    if (!answered) return;
    this.#pending.fail(
      answered.id as RequestId,
      new UpstreamInvalidReplyError(
        `upstream ${this.name} answered with a message that is not valid JSON-RPC; whether it acted is unknown`,
      ),
    );
  }

  #report(event: UpstreamLifecycle): void {
    this.#tell(() => this.#handlers.onLifecycle?.(event));
  }

  /** Tells a handler something: what it does with it (or throws) never changes what the connection does. */
  #tell(handler: () => void): void {
    try {
      handler();
    } catch {
      // A handler's failure is its own.
    }
  }

  #receive(transport: Transport, received: JSONRPCMessage): void {
    if (transport !== this.#transport) return;
    // Scrubbed here, once, for every path on: replies, errors, progress, logs, requests to the client.
    const message = this.#options.secrets?.redact(received) ?? received;
    if (isResponse(message)) {
      const id = (message as { id?: RequestId }).id;
      if (id !== undefined) this.#pending.answer(id, message as UpstreamReply);
      return;
    }
    // Over Streamable HTTP an unmarked message came on the standalone stream: it is said to concern no
    // request. Over SSE every message rides the one stream: nothing can say.
    const related = takeRelatedMark(message) ?? (speaksStreamableHttp(transport) ? null : undefined);
    if (isRequest(message)) {
      const upstreamId = message.id;
      // A request of ours that asks for itself (a task's input) answers first; the rest is the handlers'.
      void (this.#pending.asked(message, related) ?? this.#handlers.onRequest(message, related))
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
    if (isNotification(message)) this.#handlers.onNotification(message, related);
  }

  #lost(transport: Transport, error: Error | undefined): void {
    if (transport !== this.#transport) return;
    this.#transport = undefined;
    this.#available = false;
    this.#pending.failAll(
      new UpstreamClosedError(`upstream ${this.name} went away${error ? `: ${error.message}` : ''}`),
    );
    void transport.close().catch(() => {});
    const wasServing = this.#serving;
    this.#serving = false;
    if (this.#closed) return;
    this.#down = { transport, error };
    // Said even if the connection is closed meanwhile (a refused initialize closes it): then with no retry.
    const report = () =>
      this.#report({
        kind: wasServing ? 'down' : 'start_failed',
        reason: this.#whyDown(),
        retryInMs: this.#scheduleRestart(),
      });
    if (!(transport instanceof StdioUpstreamTransport) || transport.exitStatus) {
      report();
      return;
    }
    // A failed write (EPIPE) says the process is going, not how: its exit code or signal is what the
    // log must say. The close above lets it exit by itself for as long as this waits, before SIGTERM.
    this.#awaitingExit = true;
    void transport.exitWithin(STDIO_EXIT_WAIT_MS).finally(() => {
      this.#awaitingExit = false;
      report();
    });
  }

  /** A lost stdio process's exit status is being waited for; its report and restart come then. */
  #awaitingExit = false;

  /** A first start failed: torn down like a crash (which retries), unless it already was. */
  #retryAfterFailedStart(error: unknown): void {
    if (this.#closed) return;
    const transport = this.#transport;
    if (transport) {
      this.#lost(transport, error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (this.#backoff.pending || this.#awaitingExit) return;
    this.#report({ kind: 'start_failed', reason: messageOf(error), retryInMs: this.#scheduleRestart() });
  }

  /** The next restart, after the backoff's delay. Returns that delay (undefined: none, one is waiting or the connection is closed). */
  #scheduleRestart(): number | undefined {
    if (this.#closed) return undefined;
    return this.#backoff.schedule((attempt, delayMs) => {
      if (this.#closed) return;
      this.#tell(() => this.#handlers.onRestart?.({ attempt, delayMs, reason: this.#whyDown() }));
      // A transport that started but failed to initialize is torn down like a crash (which schedules the next try).
      this.#connect().catch((error: unknown) => this.#retryAfterFailedStart(error));
    });
  }

  #whyDown(): string {
    const down = this.#down;
    const exit = down?.transport instanceof StdioUpstreamTransport ? down.transport.exitStatus : undefined;
    return exit ?? down?.error?.message ?? 'its connection closed';
  }
}
