import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type ClientCapabilities,
  type InitializeResult,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type {
  UpstreamConnection,
  UpstreamReply,
  UpstreamRestart,
  UpstreamSpec,
} from '../dispatch/mcp/upstream.js';
import type { ExecutionEngine } from '../executions/engine.js';
import type { CallerInfo } from '../receipts/receipt-transport.js';
import type { ToolCatalog } from './catalog.js';

/** Where a JSON-RPC error from an upstream travels inside a stored tool result, to be sent on as that error. */
export const JSONRPC_ERROR_META = 'io.idem/jsonrpc-error';

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

/** A client request the gateway is serving, as the upstream and progress notifications find it. */
export interface ForwardedRequest {
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

/**
 * What one client session holds, shared by the steps that serve it
 * (initialize, tools/list, tools/call, forwarding): the front transport, the
 * upstream connections, the catalog, the requests in flight, and the one way
 * to answer the client.
 */
export class SessionState {
  readonly ctx: SessionContext;
  readonly front: Transport;
  readonly upstreams: Map<string, UpstreamConnection>;
  readonly catalog: ToolCatalog;
  /** Client requests in flight, by rendered front id. */
  readonly inFlight = new Map<string, ForwardedRequest>();
  /** Requests we sent to the client on an upstream's behalf, by our front id. */
  readonly toClient = new Map<RequestId, (reply: UpstreamReply) => void>();
  nextFrontId = 1;
  clientInfo: CallerInfo = {};
  /** What the client declared in initialize (elicitation decides who approves: gateway/elicitation.ts). */
  clientCapabilities: ClientCapabilities | undefined;
  initialized = false;
  initializing = false;
  closed = false;

  constructor(ctx: SessionContext, front: Transport) {
    this.ctx = ctx;
    this.front = front;
    this.upstreams = ctx.shared?.upstreams ?? new Map();
    this.catalog = ctx.shared?.catalog ?? ctx.newCatalog();
    // Without sessions there is no handshake per request: the shared upstreams are already initialized.
    this.initialized = ctx.shared !== undefined;
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
    const id = (message as { id?: RequestId }).id;
    const related =
      relatedRequestId ??
      (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message) ? id : undefined);
    try {
      await this.front.send(message, related !== undefined ? { relatedRequestId: related } : undefined);
    } catch (error) {
      this.front.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
