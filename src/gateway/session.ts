import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  type InitializeResult,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCNotification,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import {
  UpstreamClosedError,
  UpstreamConnection,
  type UpstreamReply,
  type UpstreamRestart,
  type UpstreamSpec,
  UpstreamUnavailableError,
} from '../dispatch/mcp/upstream.js';
import { IDEM_CODES, NotDispatchedError, OutcomeUnknownError } from '../errors.js';
import {
  idemAnswer,
  META,
  STATUS_ACTION_DESCRIPTION,
  STATUS_TOOL_ANNOTATIONS,
  STATUS_TOOL_DESCRIPTION,
} from '../executions/answers.js';
import type { ExecutionEngine } from '../executions/engine.js';
import { renderRequestId, requestKey } from '../identity/request-key.js';
import type { CallerInfo } from '../receipts/receipt-transport.js';
import type { CatalogEntry, ToolCatalog } from './catalog.js';

/** Where a JSON-RPC error from an upstream travels inside a stored tool result, to be sent on as that error. */
export const JSONRPC_ERROR_META = 'io.idem/jsonrpc-error';

/** JSON-RPC codes meaning the upstream refused the request before running it. */
const REFUSED_BEFORE_RUNNING = new Set([-32600, -32601, -32602]);

export interface SessionContext {
  engine: ExecutionEngine;
  upstreams: UpstreamSpec[];
  newCatalog(): ToolCatalog;
  statusTool: string;
  actorOf(info: CallerInfo): string;
  version: string;
  /** How long a call waits for a restarting upstream before answering IDEM_NOT_EXECUTED. */
  upstreamWaitMs: number;
  onSessionEvent?(kind: 'session_start' | 'session_end', detail: Record<string, unknown>): void;
  /** An upstream of this session (null: of the shared upstreams) is being restarted. */
  onUpstreamRestart?(
    restart: UpstreamRestart & { upstream: string; session: string | null; actor: string | null },
  ): void;
  upstreamStderr?: 'inherit' | 'ignore' | 'pipe';
  /**
   * Stateless fronts: every request is a session of its own, so they all use
   * these upstream connections and this catalog, initialized once by the gateway.
   */
  shared?: SharedUpstreams;
}

export interface SharedUpstreams {
  upstreams: Map<string, UpstreamConnection>;
  catalog: ToolCatalog;
  initializeResult: InitializeResult;
}

interface ForwardedRequest {
  frontId: RequestId;
  upstream: string;
  upstreamId?: RequestId;
  progressToken?: string | number;
  /** Aborted when the client cancels: the engine then records the outcome as unknown. */
  cancelled?: AbortController;
}

/**
 * One client session through the gateway: a front transport on one side, one
 * connection per upstream on the other, and JSON-RPC messages passed between
 * them faithfully — except `tools/call` with effects, which goes through the
 * execution engine, and `tools/list`, which gets honest annotations and the
 * status tool.
 */
export class ProxySession {
  readonly #ctx: SessionContext;
  readonly #front: Transport;
  readonly #upstreams: Map<string, UpstreamConnection>;
  readonly #catalog: ToolCatalog;
  /** Client requests in flight, by rendered front id. */
  readonly #inFlight = new Map<string, ForwardedRequest>();
  /** Requests we sent to the client on an upstream's behalf, by our front id. */
  readonly #toClient = new Map<RequestId, (reply: UpstreamReply) => void>();
  #nextFrontId = 1;
  #clientInfo: CallerInfo = {};
  #initialized = false;
  #initializing = false;
  #closed = false;

  constructor(ctx: SessionContext, front: Transport) {
    this.#ctx = ctx;
    this.#front = front;
    this.#upstreams = ctx.shared?.upstreams ?? new Map();
    this.#catalog = ctx.shared?.catalog ?? ctx.newCatalog();
    // Without sessions there is no handshake per request: the shared upstreams are already initialized.
    this.#initialized = ctx.shared !== undefined;
  }

  async start(): Promise<void> {
    this.#front.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
      this.#receive(message, extra).catch((error: unknown) => this.#front.onerror?.(error as Error));
    };
    const previousClose = this.#front.onclose;
    this.#front.onclose = () => {
      previousClose?.();
      void this.close();
    };
    await this.#front.start();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#initialized)
      this.#ctx.onSessionEvent?.('session_end', {
        session: this.#front.sessionId ?? null,
        actor: this.#actor(),
      });
    if (!this.#ctx.shared) await Promise.all([...this.#upstreams.values()].map((u) => u.close()));
    await this.#front.close().catch(() => {});
  }

  get #prefixed(): boolean {
    return this.#ctx.upstreams.length > 1;
  }

  async #receive(message: JSONRPCMessage, extra?: MessageExtraInfo): Promise<void> {
    if (extra?.authInfo) this.#clientInfo = { ...this.#clientInfo, authInfo: extra.authInfo };
    if (isJSONRPCRequest(message)) return this.#onRequest(message, extra);
    if (isJSONRPCNotification(message)) return this.#onNotification(message);
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = (message as { id?: RequestId }).id;
      const waiting = id === undefined ? undefined : this.#toClient.get(id);
      if (waiting && id !== undefined) {
        this.#toClient.delete(id);
        waiting(message as UpstreamReply);
      }
    }
  }

  async #onRequest(request: JSONRPCRequest, extra?: MessageExtraInfo): Promise<void> {
    if (request.method === 'initialize') return this.#initialize(request);
    if (!this.#initialized) {
      return this.#replyError(
        request.id,
        -32600,
        'Bad Request: the session is not initialized (send initialize first)',
      );
    }
    switch (request.method) {
      case 'ping':
        return this.#reply(request.id, {});
      case 'tools/list':
        return this.#toolsList(request);
      case 'tools/call':
        return this.#toolsCall(request, extra);
      default:
        return this.#forward(request, this.#routeFor(request));
    }
  }

  async #onNotification(notification: JSONRPCNotification): Promise<void> {
    switch (notification.method) {
      case 'notifications/initialized':
        // Each upstream was already told, when the gateway initialized it.
        return;
      case 'notifications/cancelled': {
        const frontId = (notification.params as { requestId?: RequestId } | undefined)?.requestId;
        const forwarded = frontId === undefined ? undefined : this.#inFlight.get(renderRequestId(frontId));
        forwarded?.cancelled?.abort();
        if (forwarded?.upstreamId !== undefined) {
          await this.#upstreams.get(forwarded.upstream)?.notify('notifications/cancelled', {
            ...notification.params,
            requestId: forwarded.upstreamId,
          });
        }
        return;
      }
      default:
        // roots/list_changed and anything newer: every upstream may care.
        for (const upstream of this.#upstreams.values())
          await upstream.notify(notification.method, notification.params);
    }
  }

  async #initialize(request: JSONRPCRequest): Promise<void> {
    if (this.#ctx.shared) return this.#reply(request.id, this.#mergeInitialize([...this.#sharedResults()]));
    // A second initialize would start a second set of upstreams (leaking the first) and could
    // change the client name, and with it the actor, in the middle of a session.
    if (this.#initialized || this.#initializing) {
      return this.#replyError(request.id, -32600, 'Invalid Request: the session is already initialized');
    }
    this.#initializing = true;
    const params = request.params as
      | { clientInfo?: { name?: string; version?: string }; protocolVersion?: string }
      | undefined;
    if (params?.clientInfo?.name)
      this.#clientInfo = { ...this.#clientInfo, clientName: params.clientInfo.name };
    const results: [string, InitializeResult][] = [];
    try {
      for (const spec of this.#ctx.upstreams) {
        const connection = new UpstreamConnection(spec, this.#handlersFor(spec.name), {
          ...(this.#ctx.upstreamStderr ? { stderr: this.#ctx.upstreamStderr } : {}),
        });
        this.#upstreams.set(spec.name, connection);
        results.push([spec.name, await connection.start(request.params)]);
      }
    } catch (error) {
      // The client may try again: nothing of this attempt stays running.
      await Promise.all([...this.#upstreams.values()].map((u) => u.close()));
      this.#upstreams.clear();
      return this.#replyError(
        request.id,
        -32603,
        `an upstream could not be started: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      this.#initializing = false;
    }
    this.#initialized = true;
    this.#ctx.onSessionEvent?.('session_start', {
      session: this.#front.sessionId ?? null,
      actor: this.#actor(),
      client: params?.clientInfo ?? null,
      protocol_version: results[0]?.[1].protocolVersion ?? params?.protocolVersion ?? null,
    });
    return this.#reply(request.id, this.#mergeInitialize(results));
  }

  *#sharedResults(): Iterable<[string, InitializeResult]> {
    for (const [name, upstream] of this.#upstreams) {
      if (upstream.initializeResult) yield [name, upstream.initializeResult];
    }
  }

  /** One upstream: its own answer, with tools ensured (the status tool is ours). Several: a union. */
  #mergeInitialize(results: [string, InitializeResult][]): InitializeResult {
    const first = results[0]?.[1] as InitializeResult;
    if (results.length === 1) {
      return { ...first, capabilities: { ...first.capabilities, tools: first.capabilities.tools ?? {} } };
    }
    const capabilities: Record<string, unknown> = {};
    for (const [, result] of results) {
      for (const [key, value] of Object.entries(result.capabilities)) {
        capabilities[key] = { ...(capabilities[key] as object | undefined), ...(value as object) };
      }
    }
    capabilities.tools ??= {};
    return {
      protocolVersion: first.protocolVersion,
      capabilities,
      serverInfo: { name: 'idem-gateway', version: this.#ctx.version },
      instructions:
        results
          .map(([name, r]) => (r.instructions ? `${name}: ${r.instructions}` : ''))
          .filter(Boolean)
          .join('\n\n') || undefined,
    } as InitializeResult;
  }

  async #toolsList(request: JSONRPCRequest): Promise<void> {
    const cursor = (request.params as { cursor?: string } | undefined)?.cursor;
    const tools: Tool[] = [];
    let nextCursor: string | undefined;
    try {
      if (!this.#prefixed) {
        const [name, upstream] = [...this.#upstreams.entries()][0] as [string, UpstreamConnection];
        const page = await this.#listPage(upstream, cursor);
        if (page.error) return this.#send({ jsonrpc: '2.0', id: request.id, error: page.error });
        if (cursor === undefined) this.#catalog.clear(name);
        tools.push(...this.#catalog.add(name, page.tools).map((entry) => this.#catalog.publish(entry)));
        nextCursor = page.nextCursor;
      } else {
        for (const [name, upstream] of this.#upstreams) {
          const listed = await this.#listAll(upstream).catch(() => undefined);
          // An upstream that is down (restarting) keeps the tools it had: they come back with it.
          if (listed) {
            this.#catalog.clear(name);
            this.#catalog.add(name, listed);
          }
          tools.push(
            ...this.#catalog
              .entries()
              .filter((entry) => entry.upstream === name)
              .map((entry) => this.#catalog.publish(entry)),
          );
        }
      }
    } catch (error) {
      return this.#replyError(request.id, -32603, `tools/list failed upstream: ${String(error)}`);
    }
    if (cursor === undefined) tools.push(this.#statusToolDefinition());
    return this.#reply(request.id, { tools, ...(nextCursor ? { nextCursor } : {}) });
  }

  /** Every page of an upstream's tools (an error answer ends the list); throws if the upstream is down. */
  async #listAll(upstream: UpstreamConnection): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#listPage(upstream, cursor);
      if (page.error) break;
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async #listPage(upstream: UpstreamConnection, cursor: string | undefined) {
    const reply = await upstream.request('tools/list', cursor ? { cursor } : undefined);
    if ('error' in reply) return { tools: [] as Tool[], error: reply.error };
    const result = reply.result as { tools?: Tool[]; nextCursor?: string };
    // The gateway's status tool answers for the gateway's executions; an upstream tool of
    // the same name (an upstream built with the Idem library has one) would be unreachable.
    const tools = (result.tools ?? []).filter((tool) => this.#prefixed || tool.name !== this.#ctx.statusTool);
    return { tools, nextCursor: result.nextCursor, error: undefined };
  }

  async #toolsCall(request: JSONRPCRequest, _extra?: MessageExtraInfo): Promise<void> {
    const params = (request.params ?? {}) as {
      name?: unknown;
      arguments?: unknown;
      _meta?: Record<string, unknown>;
    };
    const name = typeof params.name === 'string' ? params.name : '';
    if (name === this.#ctx.statusTool) {
      const { ref, action } = (params.arguments ?? {}) as { ref?: unknown; action?: unknown };
      if (typeof ref !== 'string' || ref.length === 0 || ref.length > 128) {
        return this.#reply(
          request.id,
          idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, {
            detail: 'Pass {"ref": "exe_…"} from an earlier answer.',
          }),
        );
      }
      if (action !== undefined && action !== 'status' && action !== 'repeat') {
        return this.#reply(
          request.id,
          idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, {
            detail: '"action" is "status" (the default) or "repeat".',
          }),
        );
      }
      if (action === 'repeat') return this.#repeat(request, ref, params._meta);
      return this.#reply(request.id, await this.#ctx.engine.status(ref, this.#actor()));
    }
    const { entry, unlisted } = await this.#lookUpTool(name);
    if (!entry && unlisted.length > 0) {
      // The tool may belong to an upstream that is restarting: "Unknown tool" would tell a model it does not exist.
      return this.#reply(
        request.id,
        idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
          detail: `The tools of upstream ${unlisted.map((u) => `"${u}"`).join(', ')} could not be listed: it is down (restarting).`,
        }),
      );
    }
    if (!entry) return this.#replyError(request.id, -32602, `Unknown tool: ${name}`);
    const upstream = this.#upstreams.get(entry.upstream) as UpstreamConnection;

    if (entry.contract.replay === 'read_only') {
      return this.#forward({ ...request, params: { ...params, name: entry.upstreamName } }, entry.upstream);
    }

    let args: Record<string, unknown>;
    try {
      args = structuredClone(params.arguments ?? {}) as Record<string, unknown>;
    } catch {
      // Nesting deep enough to overflow the stack (JSON.parse accepts it): not an action anyone can identify.
      return this.#reply(
        request.id,
        idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, {
          detail: `Invalid arguments for ${name}: nested too deeply to process.`,
        }),
      );
    }
    if (entry.validate && !entry.validate(args)) {
      const why = entry.validate.errors
        ?.map((e) => `${e.instancePath || '(arguments)'} ${e.message}`)
        .join('; ');
      return this.#reply(
        request.id,
        idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `Invalid arguments for ${name}: ${why}.` }),
      );
    }

    const actor = this.#actor();
    const session = this.#front.sessionId ?? null;
    const forwarded: ForwardedRequest = {
      frontId: request.id,
      upstream: entry.upstream,
      cancelled: new AbortController(),
    };
    const progressToken = params._meta?.progressToken;
    if (typeof progressToken === 'string' || typeof progressToken === 'number')
      forwarded.progressToken = progressToken;
    this.#inFlight.set(renderRequestId(request.id), forwarded);
    try {
      const result = await this.#ctx.engine.execute(
        {
          signal: forwarded.cancelled?.signal,
          tool: name,
          channel: 'mcp',
          target: entry.upstream,
          credentialRef: null,
          method: 'tools/call',
          arguments: args,
          contract: entry.contract,
          caller: {
            actor,
            session,
            requestRef: requestKey({ actor, session, id: request.id, method: 'tools/call', tool: name }),
          },
        },
        ({ executionId }) =>
          this.#dispatchToolCall(upstream, entry, params, args, executionId as string, forwarded),
      );
      return this.#replyWithResult(request.id, result, forwarded);
    } finally {
      this.#inFlight.delete(renderRequestId(request.id));
    }
  }

  #replyWithResult(id: RequestId, result: CallToolResult, forwarded: ForwardedRequest): Promise<void> {
    // A cancelled request gets no response (the client said it will not use one).
    if (forwarded.cancelled?.signal.aborted) return Promise.resolve();
    const error = result._meta?.[JSONRPC_ERROR_META] as
      | { code: number; message: string; data?: unknown }
      | undefined;
    if (error) return this.#send({ jsonrpc: '2.0', id, error });
    return this.#reply(id, result);
  }

  /**
   * The status tool's `action: "repeat"`: the engine decides whether `ref` may
   * run again; this session runs it through its own upstream connection, as
   * the tool call it was, under this status request's id (so progress and
   * cancellation follow it).
   */
  async #repeat(
    request: JSONRPCRequest,
    ref: string,
    meta: Record<string, unknown> | undefined,
  ): Promise<void> {
    const actor = this.#actor();
    const session = this.#front.sessionId ?? null;
    const forwarded: ForwardedRequest = {
      frontId: request.id,
      upstream: '',
      cancelled: new AbortController(),
    };
    const progressToken = meta?.progressToken;
    if (typeof progressToken === 'string' || typeof progressToken === 'number')
      forwarded.progressToken = progressToken;
    this.#inFlight.set(renderRequestId(request.id), forwarded);
    try {
      const caller = {
        actor,
        session,
        requestRef: requestKey({
          actor,
          session,
          id: request.id,
          method: 'tools/call',
          tool: this.#ctx.statusTool,
        }),
      };
      const result = await this.#ctx.engine.repeat(ref, caller, async (remembered) => {
        const { entry } = await this.#lookUpTool(remembered.tool);
        if (!entry) return undefined;
        const upstream = this.#upstreams.get(entry.upstream) as UpstreamConnection;
        if (!upstream.available) {
          try {
            await upstream.whenReady(this.#ctx.upstreamWaitMs);
          } catch {
            return {
              answer: idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
                detail: `The upstream "${entry.upstream}" is down (restarting); nothing was repeated.`,
              }),
            };
          }
        }
        forwarded.upstream = entry.upstream;
        const args = remembered.arguments as Record<string, unknown>;
        const found = entry;
        return {
          call: {
            signal: forwarded.cancelled?.signal,
            tool: found.name,
            channel: 'mcp',
            target: found.upstream,
            credentialRef: null,
            method: 'tools/call',
            arguments: args,
            contract: found.contract,
            caller,
          },
          dispatch: ({ executionId }) =>
            this.#dispatchToolCall(
              upstream,
              found,
              meta ? { _meta: meta } : {},
              args,
              executionId as string,
              forwarded,
            ),
        };
      });
      return this.#replyWithResult(request.id, result, forwarded);
    } finally {
      this.#inFlight.delete(renderRequestId(request.id));
    }
  }

  async #dispatchToolCall(
    upstream: UpstreamConnection,
    entry: CatalogEntry,
    params: { _meta?: Record<string, unknown> },
    args: Record<string, unknown>,
    executionId: string,
    forwarded: ForwardedRequest,
  ): Promise<CallToolResult> {
    // Waiting here, after the engine matched the call, lets a retry of an earlier call hear about
    // that call (unknown, completed) rather than "not executed" while the upstream restarts.
    if (!upstream.available) {
      await upstream.whenReady(this.#ctx.upstreamWaitMs).catch(() => {
        throw new NotDispatchedError(`The upstream "${entry.upstream}" is down (restarting).`);
      });
    }
    let reply: UpstreamReply;
    try {
      reply = await upstream.request(
        'tools/call',
        {
          ...params,
          name: entry.upstreamName,
          arguments: args,
          // An upstream built with the Idem library deduplicates on this across the boundary.
          _meta: { ...params._meta, [META.executionId]: executionId },
        },
        undefined,
        (upstreamId) => {
          forwarded.upstreamId = upstreamId;
        },
      );
    } catch (error) {
      // Could not send: nothing reached the upstream. Sent, then the upstream went away: it may have acted.
      if (error instanceof UpstreamUnavailableError) throw new NotDispatchedError(error.message);
      if (error instanceof UpstreamClosedError) throw new OutcomeUnknownError(error.message);
      throw error;
    }
    forwarded.upstreamId = undefined;
    if ('error' in reply) {
      if (!REFUSED_BEFORE_RUNNING.has(reply.error.code)) {
        throw new OutcomeUnknownError(
          `upstream answered with JSON-RPC error ${reply.error.code}: ${reply.error.message}`,
        );
      }
      return {
        isError: true,
        content: [{ type: 'text', text: reply.error.message }],
        _meta: { [JSONRPC_ERROR_META]: reply.error },
      };
    }
    return reply.result as CallToolResult;
  }

  /** Calls an upstream tool directly (status probes). */
  async callUpstreamTool(
    visibleName: string,
    args: Record<string, unknown>,
  ): Promise<CallToolResult | undefined> {
    const { entry } = await this.#lookUpTool(visibleName);
    const upstream = entry ? this.#upstreams.get(entry.upstream) : undefined;
    if (!entry || !upstream?.available) return undefined;
    const reply = await upstream.request('tools/call', { name: entry.upstreamName, arguments: args });
    return 'error' in reply ? undefined : (reply.result as CallToolResult);
  }

  /**
   * A tool by the name the client sees. One not in the catalog is listed
   * again; an upstream that is down (restarting) is waited for, up to
   * `upstreamWaitMs`, since the tool may be one of its. `unlisted` names the
   * upstreams whose tools could still not be listed.
   */
  async #lookUpTool(name: string): Promise<{ entry: CatalogEntry | undefined; unlisted: string[] }> {
    const known = this.#catalog.get(name);
    if (known) return { entry: known, unlisted: [] };
    let unlisted = await this.#refreshCatalog([...this.#upstreams.keys()]);
    if (!this.#catalog.get(name) && unlisted.length > 0) {
      await Promise.all(
        unlisted.map((u) =>
          this.#upstreams
            .get(u)
            ?.whenReady(this.#ctx.upstreamWaitMs)
            .catch(() => {}),
        ),
      );
      unlisted = await this.#refreshCatalog(unlisted);
    }
    return { entry: this.#catalog.get(name), unlisted };
  }

  /** Lists the tools of these upstreams into the catalog; returns those that could not be asked (down). */
  async #refreshCatalog(names: string[]): Promise<string[]> {
    const unlisted: string[] = [];
    for (const name of names) {
      const upstream = this.#upstreams.get(name);
      if (!upstream) continue;
      if (!upstream.available) {
        unlisted.push(name);
        continue;
      }
      try {
        this.#catalog.add(name, await this.#listAll(upstream));
      } catch {
        unlisted.push(name);
      }
    }
    return unlisted;
  }

  /** Passes a request to an upstream and its reply back, ids translated both ways. */
  async #forward(request: JSONRPCRequest, upstreamName: string | undefined): Promise<void> {
    const upstream = upstreamName ? this.#upstreams.get(upstreamName) : undefined;
    if (!upstream) return this.#replyError(request.id, -32601, `Method not found: ${request.method}`);
    const forwarded: ForwardedRequest = { frontId: request.id, upstream: upstream.name };
    const progressToken = (request.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta
      ?.progressToken;
    if (typeof progressToken === 'string' || typeof progressToken === 'number')
      forwarded.progressToken = progressToken;
    this.#inFlight.set(renderRequestId(request.id), forwarded);
    try {
      const reply = await upstream.request(
        request.method,
        this.#unprefixed(request),
        undefined,
        (upstreamId) => {
          forwarded.upstreamId = upstreamId;
        },
      );
      return this.#send({ ...reply, id: request.id } as JSONRPCMessage);
    } catch (error) {
      return this.#replyError(request.id, -32603, error instanceof Error ? error.message : String(error));
    } finally {
      this.#inFlight.delete(renderRequestId(request.id));
    }
  }

  /** Which upstream a non-tool request goes to. One upstream: that one. Several: by prompt-name prefix, else the first that offers the capability. */
  #routeFor(request: JSONRPCRequest): string | undefined {
    const names = [...this.#upstreams.keys()];
    if (names.length === 1) return names[0];
    const params = request.params as { name?: unknown; ref?: { type?: string; name?: unknown } } | undefined;
    const named =
      typeof params?.name === 'string'
        ? params.name
        : typeof params?.ref?.name === 'string'
          ? params.ref.name
          : undefined;
    if (named) {
      const match = names.find((n) => named.startsWith(`${n}__`));
      if (match) return match;
    }
    const capability = request.method.split('/')[0];
    return (
      names.find((n) => {
        const caps = this.#upstreams.get(n)?.initializeResult?.capabilities as
          | Record<string, unknown>
          | undefined;
        return capability ? caps?.[capability] !== undefined : false;
      }) ?? names[0]
    );
  }

  /** Several upstreams: prompt names carry the upstream prefix on the client side only. */
  #unprefixed(request: JSONRPCRequest): JSONRPCRequest['params'] {
    if (!this.#prefixed || !request.params) return request.params;
    const params = { ...request.params } as Record<string, unknown>;
    if (typeof params.name === 'string') params.name = params.name.replace(/^[A-Za-z0-9_-]+?__/, '');
    return params as JSONRPCRequest['params'];
  }

  #handlersFor(upstreamName: string) {
    return {
      onRestart: (restart: UpstreamRestart) =>
        this.#ctx.onUpstreamRestart?.({
          ...restart,
          upstream: upstreamName,
          session: this.#front.sessionId ?? null,
          actor: this.#actor(),
        }),
      onRequest: async (request: JSONRPCRequest): Promise<UpstreamReply> => {
        const frontId = `idem-${this.#nextFrontId++}`;
        const reply = new Promise<UpstreamReply>((resolve) => this.#toClient.set(frontId, resolve));
        await this.#send({ ...request, id: frontId }, this.#relatedTo(upstreamName));
        return reply;
      },
      onNotification: (notification: JSONRPCNotification) => {
        if (notification.method === 'notifications/tools/list_changed') this.#catalog.clear(upstreamName);
        if (notification.method === 'notifications/cancelled') {
          // The upstream cancels one of its requests to the client: our id for it is not the upstream's.
          return;
        }
        const token = (notification.params as { progressToken?: unknown } | undefined)?.progressToken;
        const related =
          notification.method === 'notifications/progress' && token !== undefined
            ? [...this.#inFlight.values()].find((f) => f.progressToken === token)?.frontId
            : this.#relatedTo(upstreamName);
        void this.#send(notification, related);
      },
    };
  }

  /** The client request an upstream's message belongs to, when that is unambiguous. */
  #relatedTo(upstreamName: string): RequestId | undefined {
    const candidates = [...this.#inFlight.values()].filter((f) => f.upstream === upstreamName);
    return candidates.length === 1 ? candidates[0]?.frontId : undefined;
  }

  #statusToolDefinition(): Tool {
    return {
      name: this.#ctx.statusTool,
      title: 'Status of an earlier action, or a deliberate repeat',
      description: STATUS_TOOL_DESCRIPTION,
      inputSchema: {
        type: 'object',
        properties: {
          ref: {
            type: 'string',
            minLength: 1,
            maxLength: 128,
            description: 'The execution ref (exe_…) from an earlier answer',
          },
          action: {
            type: 'string',
            enum: ['status', 'repeat'],
            default: 'status',
            description: STATUS_ACTION_DESCRIPTION,
          },
        },
        required: ['ref'],
      },
      annotations: STATUS_TOOL_ANNOTATIONS,
    };
  }

  #actor(): string {
    return this.#ctx.actorOf(this.#clientInfo);
  }

  #reply(id: RequestId, result: unknown): Promise<void> {
    return this.#send({ jsonrpc: '2.0', id, result } as JSONRPCMessage);
  }

  #replyError(id: RequestId, code: number, message: string): Promise<void> {
    return this.#send({ jsonrpc: '2.0', id, error: { code, message } });
  }

  async #send(message: JSONRPCMessage, relatedRequestId?: RequestId): Promise<void> {
    if (this.#closed) return;
    const id = (message as { id?: RequestId }).id;
    const related =
      relatedRequestId ??
      (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message) ? id : undefined);
    try {
      await this.#front.send(message, related !== undefined ? { relatedRequestId: related } : undefined);
    } catch (error) {
      this.#front.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

/**
 * The upstream connections of a stateless front, opened once with the
 * gateway's own identity. Nothing can be asked of a client without a session:
 * an upstream's sampling or elicitation request is answered with an error.
 */
export async function startSharedUpstreams(ctx: SessionContext): Promise<SharedUpstreams> {
  const upstreams = new Map<string, UpstreamConnection>();
  const catalog = ctx.newCatalog();
  let first: InitializeResult | undefined;
  for (const spec of ctx.upstreams) {
    const connection = new UpstreamConnection(
      spec,
      {
        onRequest: async (request) =>
          request.method === 'ping'
            ? { jsonrpc: '2.0', id: request.id, result: {} }
            : {
                jsonrpc: '2.0',
                id: request.id,
                error: {
                  code: -32601,
                  message: `${request.method} needs a client session; this gateway front is stateless`,
                },
              },
        onNotification: (notification) => {
          if (notification.method === 'notifications/tools/list_changed') catalog.clear(spec.name);
        },
        onRestart: (restart) =>
          ctx.onUpstreamRestart?.({ ...restart, upstream: spec.name, session: null, actor: null }),
      },
      ctx.upstreamStderr ? { stderr: ctx.upstreamStderr } : {},
    );
    upstreams.set(spec.name, connection);
    const result = await connection.start({
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'idem-gateway', version: ctx.version },
    });
    first ??= result;
  }
  return { upstreams, catalog, initializeResult: first as InitializeResult };
}
