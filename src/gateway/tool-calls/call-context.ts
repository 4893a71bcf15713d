import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type {
  CallToolResult,
  ClientCapabilities,
  JSONRPCMessage,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConnection, UpstreamReply } from '../../dispatch/mcp/index.js';
import type { TaskRequest } from '../../executions/call.js';
import type { ExecutionEngine } from '../../executions/engine.js';
import type { ToolCallRequest } from '../../protocol/tool-call-request.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import type { InputRound } from '../revisions/input-round.js';

// What one tools/call runs on (tool-call.ts): a narrow context, not the session's whole state.
// The session (sessions/session-state.ts), its tools (sessions/tools-list.ts) and the client's
// revision (revisions/client-revision.ts) implement these interfaces; the handler knows only them.

/** What a `tools/call` is answered with. The handler decides; the proxy core (session.ts) sends it. */
export type ToolCallAnswer =
  | { result: CallToolResult | Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } }
  /** A read-only tool's call: the proxy core passes it to the upstream as it came, and its reply back. */
  | { forward: { request: JSONRPCRequest; upstream: string; headers: Record<string, string> | undefined } }
  /** Nothing to send: the client cancelled. */
  | { none: true };

export const NO_ANSWER: ToolCallAnswer = { none: true };

/** A client request the gateway is serving, as the upstream and progress notifications find it. */
export interface ForwardedRequest {
  frontId: RequestId;
  upstream: string;
  upstreamId?: RequestId;
  progressToken?: string | number;
  /** The token the upstream was given instead, on shared connections. */
  upstreamProgressToken?: string;
  /** The request's `_meta` as the upstream gets it: the progress token as the upstream knows it. */
  upstreamMeta?: Record<string, unknown>;
  /** The level of log messages a 2026-07-28 request asked for (absent: none). */
  logLevel?: string;
  /** A 2026-07-28 upstream's `input_required` answer, passed on to a client of that revision. */
  inputRequired?: Record<string, unknown>;
  /** Aborted when the client cancels: the engine then records the outcome as unknown. */
  cancelled?: AbortController;
}

/** What a call needs of its session: its requests in flight, its client to ask, its limits. */
export interface CallSession {
  /** The front's session id (null: none, as on a stateless front). */
  readonly id: string | null;
  /** False on the gateway's shared connections (a stateless front): no client can be asked anything there. */
  readonly canAsk: boolean;
  /** What the client declared in initialize. */
  readonly clientCapabilities: ClientCapabilities | undefined;
  /** The input rounds open on the shared connections this session uses (revisions/input-rounds.ts). */
  readonly rounds: Map<string, InputRound> | undefined;
  /** How long a call waits for a restarting upstream before answering IDEM_NOT_EXECUTED. */
  readonly upstreamWaitMs: number;
  /** Idem's own status tool, by the name the client sees. */
  readonly statusTool: string;
  /** The scopes a call of `tool` needs that the caller's token lacks (none without OAuth). */
  scopesMissing(auth: AuthInfo | undefined, tool: string): string[];
  /** Registers a request being served: cancellation and the upstream's progress find it (untrack when answered). */
  track(
    frontId: RequestId,
    upstream: string,
    meta: Record<string, unknown> | undefined,
    cancellable: boolean,
  ): ForwardedRequest;
  untrack(frontId: RequestId): void;
  /** A call running on an upstream: the session is not closed under it until the returned function is called. */
  dispatching(): () => void;
  /** Sends a request of the gateway's own to the client; undefined if no reply came in time. */
  ask(
    method: string,
    params: Record<string, unknown>,
    relatedTo: RequestId,
    cancelled: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<UpstreamReply | undefined>;
  send(message: JSONRPCMessage, relatedRequestId?: RequestId): Promise<void>;
  readonly closed: boolean;
  /** Aborted when the session closes: what waits on its behalf (task watches, tasks/result) ends. */
  readonly ended: AbortSignal;
  /** Something failed on the session's behalf with no request left to answer: for the operator's log. */
  failed(what: string, error: unknown): void;
}

/** The tools a session can call, by the name its client sees. */
export interface ToolLookup {
  /**
   * The tool named (listed again if unknown, a restarting upstream waited for); `unlisted`: the
   * upstreams whose tools could still not be listed; `fault`: the config's, which stops every tool.
   */
  lookUp(name: string): Promise<{ entry: CatalogEntry | undefined; unlisted: string[]; fault?: Error }>;
}

/**
 * What the client's revision makes of one call, read once before anything of it runs; the
 * handler applies each part at its step.
 */
export interface RevisionCall {
  /** Refused by the revision's rules (SEP-2243 headers), before anything is recorded or run. */
  refused?: ToolCallAnswer;
  /** The open input round this call continues: it is answered by that round, nothing new is claimed. */
  continues?: InputRound;
  /** The task the client asks for; or, for a tool that requires one, the refusal of a client that cannot take it. */
  task: { task?: TaskRequest } | { refused: ToolCallAnswer };
  /** The input round the call opens when it runs (a 2026-07-28 client, a 2025-era upstream). */
  round?: InputRound;
}

/**
 * What differs between the two MCP generations, one value per session (legacy: 2025-era, with
 * `initialize`; modern: 2026-07-28): revisions/client-revision.ts, LEGACY and MODERN.
 */
export interface ClientRevision {
  /** One call against the revision's rules, and what it asks of the gateway. */
  readCall(call: ToolCallRequest, entry: CatalogEntry, ctx: CallContext): RevisionCall;
  /**
   * A 2026-07-28 upstream's answer to the call while it asks for input (`input_required`): the
   * reply once the client answered and the call was re-issued (`resend`), inside the one dispatch.
   */
  answerRounds(
    session: CallSession,
    first: UpstreamReply,
    resend: (round: Record<string, unknown>) => Promise<UpstreamReply>,
    forwarded: ForwardedRequest,
    timeoutMs: number,
  ): Promise<UpstreamReply>;
  /** An upstream's `input_required` this client cannot be asked: kept for the answer; the text of the outcome. */
  inputRequired(forwarded: ForwardedRequest, result: Record<string, unknown>): string;
  /** A finished call's result, as this client takes it (a task in its revision's shape). */
  answer(ctx: CallContext, result: CallToolResult, forwarded: ForwardedRequest): ToolCallAnswer;
  /** A client's `tasks/*` request, answered from the store by this revision's rules. */
  answerTaskRequest(ctx: CallContext, request: JSONRPCRequest): Promise<ToolCallAnswer>;
  /** Any result sent to this client, in the shape it reads (2026-07-28: `resultType`, cache hints). */
  result(method: string | undefined, result: Record<string, unknown>): Record<string, unknown>;
  /** Whether an upstream's log message at `level` reaches a request that asked for `threshold`. */
  hears(level: unknown, threshold: string | undefined): boolean;
}

/** What one call runs on. */
export interface CallContext {
  catalog: ToolLookup;
  upstreams: ReadonlyMap<string, UpstreamConnection>;
  engine: ExecutionEngine;
  actor: string;
  session: CallSession;
  revision: ClientRevision;
}
