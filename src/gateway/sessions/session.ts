import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  CallToolResult,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  MessageExtraInfo,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConnection, UpstreamReply } from '../../dispatch/mcp/index.js';
import { renderRequestId } from '../../identity/request-key.js';
import { isNotification, isRequest, isResponse } from '../../protocol/message-kind.js';
import {
  envelopeOf,
  isModernVersion,
  MODERN_VERSIONS,
  unsupportedVersionError,
} from '../../protocol/revisions.js';
import { TASK_METHODS } from '../../protocol/task-requests.js';
import { readToolCall } from '../../protocol/tool-call-request.js';
import { LEGACY, MODERN } from '../revisions/client-revision.js';
import type { CallContext, ToolCallAnswer, ToolLookup } from '../tool-calls/call-context.js';
import { callStatusTool } from '../tool-calls/status-tool-call.js';
import { callTool } from '../tool-calls/tool-call.js';
import { forward } from './forwarding.js';
import { discover, initialize } from './initialize.js';
import { pooledRefusal } from './pooled-upstreams.js';
import { routeFor } from './routing.js';
import { type SessionContext, SessionState } from './session-state.js';
import { listen } from './subscriptions.js';
import { lookUpTool, SessionTools, toolsList } from './tools-list.js';

// The steps of a session live beside this file, in the order a request meets them:
// session-state (what a session holds, how it answers), initialize, routing, forwarding,
// tools-list (catalog paging, tool lookup); a tools/call goes to tool-calls/tool-call.ts (or
// tool-calls/status-tool-call.ts) with a narrow context (CallContext), and its answer comes back here.
export { startSharedUpstreams } from './initialize.js';
export type { SessionContext, SharedUpstreams } from './session-state.js';

/**
 * The reason every session's `ended` signal gives, the AbortError that abort() would make: made
 * once, because abort() builds one with its stack per session, and a stateless front closes a
 * session per POST.
 */
const SESSION_ENDED = new DOMException('the client session ended', 'AbortError');

/**
 * One client session through the gateway: a front transport on one side, one
 * connection per upstream on the other, and JSON-RPC messages passed between
 * them faithfully — except `tools/call` with effects, which goes through the
 * execution engine, and `tools/list`, which gets honest annotations and the
 * status tool.
 */
export class ProxySession {
  readonly #s: SessionState;
  /** The tools a call of this session can name (its catalog, as its upstreams list them). */
  readonly #tools: ToolLookup;

  constructor(ctx: SessionContext, front: Transport) {
    this.#s = new SessionState(ctx, front);
    this.#tools = new SessionTools(this.#s);
  }

  async start(): Promise<void> {
    this.#s.front.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
      this.#receive(message, extra).catch((error: unknown) => this.#s.front.onerror?.(error as Error));
    };
    const previousClose = this.#s.front.onclose;
    this.#s.front.onclose = () => {
      previousClose?.();
      void this.close();
    };
    await this.#s.front.start();
  }

  /** Every caller gets the one close under way, settled once the session's own upstreams are closed. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  #closing: Promise<void> | undefined;

  async #close(): Promise<void> {
    this.#s.closed = true;
    this.#s.ending.abort(SESSION_ENDED);
    // Requests to the client (elicitations, an upstream's sampling) will get no reply now: settle them.
    for (const [id, settle] of this.#s.toClient)
      settle({ jsonrpc: '2.0', id, error: { code: -32000, message: 'the client session closed' } });
    this.#s.toClient.clear();
    for (const ended of this.#s.subscriptions.values()) ended.abort();

    this.#s.release();
    await Promise.all(
      [...this.#s.upstreams].filter(([name]) => this.#s.owns(name)).map(([, upstream]) => upstream.close()),
    );
    await this.#s.front.close().catch(() => {});
  }

  async #receive(message: JSONRPCMessage, extra?: MessageExtraInfo): Promise<void> {
    if (extra?.authInfo) this.#s.clientInfo = { ...this.#s.clientInfo, authInfo: extra.authInfo };
    if (isRequest(message)) return this.#answer(message, extra);
    if (isNotification(message)) return this.#onNotification(message);
    if (isResponse(message)) {
      const id = (message as { id?: RequestId }).id;
      const waiting = id === undefined ? undefined : this.#s.toClient.get(id);
      if (waiting && id !== undefined) {
        this.#s.toClient.delete(id);
        waiting(message as UpstreamReply);
      }
    }
  }

  /**
   * Handles a request, and answers it even when its handling fails on the way (a fault of the
   * gateway's own, or of its store, that nothing before caught): a client must not wait forever
   * for a reply nobody will send. What failed goes to the operator's log, not to the client (an
   * error's text may hold what it was handling); for a tool call the client is told that whether
   * the tool ran is not known.
   */
  async #answer(request: JSONRPCRequest, extra?: MessageExtraInfo): Promise<void> {
    const key = renderRequestId(request.id);
    this.#s.awaitingReply.set(key, request.method);
    this.#s.working++;
    try {
      await this.#onRequest(request, extra);
    } catch (error) {
      // Answered first: nothing the log does may keep the client waiting.
      if (this.#s.awaitingReply.has(key))
        await this.#s.replyError(request.id, -32603, internalErrorText(request.method));
      this.#s.ctx.onRequestFailed?.(request.method, error);
    } finally {
      this.#s.working--;
    }
  }

  /** Something of this session is under way (see SessionState.working): the front must not close it. */
  get inProgress(): boolean {
    return this.#s.working > 0;
  }

  async #onRequest(request: JSONRPCRequest, extra?: MessageExtraInfo): Promise<void> {
    const version = envelopeOf(request.params).protocolVersion;
    if (version !== undefined && isModernVersion(version))
      return this.#onModernRequest(request, version, extra);
    if (request.method === 'initialize') return initialize(this.#s, request);
    if (!this.#s.initialized) {
      return this.#s.replyError(
        request.id,
        -32600,
        'Bad Request: the session is not initialized (send initialize first)',
      );
    }
    switch (request.method) {
      case 'ping':
        return this.#s.reply(request.id, {});
      case 'tools/list':
        return toolsList(this.#s, request);
      case 'tools/call':
        return toolCall(this.#s, this.#tools, request, extra);
      default: {
        // Idem's tasks are its executions: answered here, from the store, never by an upstream.
        if (TASK_METHODS.has(request.method)) return this.#taskRequest(request);
        const upstream = routeFor(this.#s.upstreams, request);
        const refused = upstream && pooledRefusal(this.#s, upstream, request.method);
        if (refused) return this.#s.replyError(request.id, -32601, refused);
        return forward(this.#s, request, upstream);
      }
    }
  }

  /**
   * A 2026-07-28 request: no handshake came before it and none will; it
   * carries who the client is and what it can do. The session serves it on
   * the gateway's shared upstream connections.
   */
  async #onModernRequest(request: JSONRPCRequest, version: string, extra?: MessageExtraInfo): Promise<void> {
    const s = this.#s;
    if (s.revision === LEGACY) {
      return s.replyError(
        request.id,
        -32600,
        'Invalid Request: this connection was initialized with a 2025-era revision; a request carrying a 2026-07-28 envelope cannot be mixed into it',
      );
    }
    s.revision = MODERN;
    if (!MODERN_VERSIONS.includes(version)) {
      return s.send({
        jsonrpc: '2.0',
        id: request.id,
        error: unsupportedVersionError(version),
      });
    }
    const envelope = envelopeOf(request.params);
    if (envelope.clientInfo?.name && s.clientInfo.clientName === undefined)
      s.clientInfo = { ...s.clientInfo, clientName: envelope.clientInfo.name };
    if (!s.initialized) {
      if (!s.ctx.sharedUpstreams)
        return s.replyError(request.id, -32601, 'This front serves 2025-era revisions only');
      try {
        s.adopt(await s.ctx.sharedUpstreams());
      } catch (error) {
        return s.replyError(
          request.id,
          -32603,
          `an upstream could not be started: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    switch (request.method) {
      case 'server/discover':
        return discover(s, request);
      case 'initialize':
      case 'ping':
        // Not methods of this revision (its clients learn about a server through server/discover).
        return s.replyError(request.id, -32601, `Method not found: ${request.method}`);
      case 'tools/list':
        return toolsList(s, request);
      case 'tools/call':
        return toolCall(s, this.#tools, request, extra);
      case 'subscriptions/listen':
        return listen(s, request);
      default:
        if (TASK_METHODS.has(request.method)) return this.#taskRequest(request);
        return forward(s, request, routeFor(s.upstreams, request));
    }
  }

  /** A client's `tasks/*`, answered from the store by its revision's rules, never by an upstream. */
  async #taskRequest(request: JSONRPCRequest): Promise<void> {
    const ctx = contextOf(this.#s, this.#tools);
    return sendAnswer(this.#s, request.id, await ctx.revision.answerTaskRequest(ctx, request));
  }

  async #onNotification(notification: JSONRPCNotification): Promise<void> {
    switch (notification.method) {
      case 'notifications/initialized':
        // Each upstream was already told, when the gateway initialized it.
        return;
      case 'notifications/cancelled': {
        const frontId = (notification.params as { requestId?: RequestId } | undefined)?.requestId;
        const forwarded = frontId === undefined ? undefined : this.#s.inFlight.get(renderRequestId(frontId));
        forwarded?.cancelled?.abort();
        if (forwarded?.upstreamId !== undefined) {
          await this.#s.upstreams.get(forwarded.upstream)?.notify('notifications/cancelled', {
            ...notification.params,
            requestId: forwarded.upstreamId,
          });
        }
        return;
      }
      default:
        // roots/list_changed and anything newer: every upstream may care.
        for (const upstream of this.#s.upstreams.values())
          await upstream.notify(notification.method, notification.params);
    }
  }

  /** This session's upstream connections (the shared ones too, for a session that uses them). */
  get upstreamConnections(): Iterable<UpstreamConnection> {
    return this.#s.upstreams.values();
  }

  /** Calls an upstream tool directly (status probes), named as the config names it. */
  async callUpstreamTool(
    visibleName: string,
    args: Record<string, unknown>,
  ): Promise<CallToolResult | undefined> {
    // The probe's tool is named in the config: by the config's naming rule (tool-names.ts).
    let entry = this.#s.catalog.named(visibleName);
    if (!entry) {
      await lookUpTool(this.#s, visibleName);
      entry = this.#s.catalog.named(visibleName);
    }
    const upstream = entry ? this.#s.upstreams.get(entry.upstream) : undefined;
    if (!entry || !upstream?.available) return undefined;
    const reply = await upstream.request('tools/call', { name: entry.upstreamName, arguments: args });
    return 'error' in reply ? undefined : (reply.result as CallToolResult);
  }
}

/**
 * A `tools/call`, dispatched: Idem's own status tool to its entry, any other tool to the handler
 * (tool-calls/tool-call.ts), each with the call's narrow context; the answer they return is sent here.
 */
function toolCall(
  s: SessionState,
  tools: ToolLookup,
  request: JSONRPCRequest,
  extra?: MessageExtraInfo,
): Promise<void> {
  const answering = (async () => {
    const ctx = contextOf(s, tools);
    const call = readToolCall(request, extra);
    const answer =
      call.name === s.ctx.statusTool ? await callStatusTool(ctx, call) : await callTool(ctx, call);
    return sendAnswer(s, request.id, answer);
  })();
  // Counted until its answer is sent: a gateway shutting down delivers what it ran.
  return s.ctx.calls ? s.ctx.calls.track(answering) : answering;
}

/** What one call of this session runs on: not the session's whole state. */
function contextOf(s: SessionState, tools: ToolLookup): CallContext {
  return {
    catalog: tools,
    upstreams: s.upstreams,
    engine: s.ctx.engine,
    actor: s.ctx.actorOf(s.clientInfo),
    session: s,
    // Not known yet only on a stateless 2025-era front (no initialize there).
    revision: s.revision ?? LEGACY,
  };
}

/** Sends the answer a handler returned; a read-only tool's call goes to its upstream as it came. */
function sendAnswer(s: SessionState, id: RequestId, answer: ToolCallAnswer): Promise<void> {
  if ('result' in answer) return s.reply(id, answer.result);
  if ('error' in answer) return s.send({ jsonrpc: '2.0', id, error: answer.error });
  if ('forward' in answer)
    return forward(s, answer.forward.request, answer.forward.upstream, answer.forward.headers);
  return Promise.resolve();
}

/** What a client is told when the gateway failed while handling its request (session.ts #answer). */
export function internalErrorText(method: string): string {
  if (method === 'tools/call')
    return 'Internal error in the gateway while handling this tool call (the details are in its log). Whether the tool ran is not known: do not assume it did not run.';
  return `Internal error in the gateway while handling ${method} (the details are in its log).`;
}
