import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { StatusProbe, ToolContract } from '../contracts/contract.js';
import type { PushedReply, PushedRequest } from '../executions/call.js';
import type { ToolResult } from '../store/outcome.js';
import type { UpstreamTaskHandle } from '../store/types.js';

/** What a channel is told about the one dispatch it performs. */
export interface ActionDispatch {
  /**
   * The execution id: the target's idempotency key (HTTP), the marker's name (SSH), `_meta`'s
   * execution id (MCP). Null for a read-only tool.
   */
  executionId: string | null;
  /** A re-send of an earlier dispatch under the same key (recovery of a `keyed` tool). */
  redispatch: boolean;
  /** The caller cancelled, or its task was (tasks/cancel): the channel may stop waiting (the outcome is then unknown). */
  signal?: AbortSignal;
  /**
   * Its task's cancel alone (tasks/cancel, by any gateway): what an MCP upstream is told of itself,
   * while the caller's own cancel reaches it as the client's notification, forwarded.
   */
  taskCancelled?: AbortSignal;
  /**
   * The target answered with a task of its own: recorded durably before it is followed. Absent
   * where nothing records it (a read-only call).
   */
  upstreamTask?(handle: UpstreamTaskHandle): Promise<void>;
  /**
   * Given to a channel that checksBeforeSending, for a first dispatch: awaited just before the
   * first byte leaves, once every check passed. It records the dispatch (until then the execution
   * is only accepted, and a refusal is `denied`); it throws NotDispatchedError when that cannot be
   * recorded, and then nothing may be sent.
   */
  sending?(): Promise<void>;
  /**
   * Present once the call is an MCP task (docs/tasks.md): the target asks for input before it
   * acts (a 2026-07-28 `input_required`), and the task's client answers (`tasks/update`). Resolves
   * with the answers by key once every key is answered; rejects with NotDispatchedError when the
   * task is cancelled meanwhile (the target had not acted); resolves undefined while the call is
   * not (yet) a task: then it is answered as any call whose target asks for input first.
   */
  askInput?(
    requests: Record<string, { method: string; params?: unknown }>,
  ): Promise<Record<string, unknown> | undefined>;
  /**
   * Present while the call may become a 2026-07-28 MCP task: a request the target pushes while it
   * works (a 2025-era upstream's `elicitation/create`, `sampling/createMessage`, `roots/list`),
   * carried into the task as its input once the call is one, and answered by the task's client
   * (`tasks/update`): resolves with the reply's result or error. Undefined while the call is not
   * (yet) a task, or for another method: the request is then routed as any.
   */
  askPushed?(request: PushedRequest): Promise<PushedReply> | undefined;
}

/**
 * One way of reaching a target (docs/channels.md): an upstream MCP server,
 * HTTP, SSH. A channel performs one tool's action; the execution engine
 * around it gives it identity, claim, lease, journal and answers, the same
 * for every channel (src/dispatch/channel.contract.ts is what each must pass).
 *
 * `dispatch` resolves with the target's answer (`isError: true` for a failure
 * the target reported) and otherwise throws, choosing by what it knows:
 * - DispatchRefusedError: refused before anything left (credential unresolved,
 *   target not allowed) → IDEM_DENIED;
 * - NotDispatchedError: provably nothing sent (connect refused) → IDEM_NOT_EXECUTED;
 * - OutcomeUnknownError: sent, and no answer (timeout, connection lost) → unknown.
 */
export interface ActionChannel {
  /** `mcp`, `http`, `ssh`: recorded on the execution and part of its fingerprint. */
  readonly kind: string;
  /** Where the effect lands, as recorded (an upstream's name, an HTTP origin, an SSH inventory host). */
  readonly target: string;
  /**
   * What the far side IS when `target` is only its handle (an upstream's configured name): the
   * fingerprint's target instead of `target`, so that two servers behind one name are two
   * targets, and one server behind two names is one (identity/upstream-identity.ts). Absent where
   * the target already names the far side (an HTTP URL template, an inventory host).
   */
  readonly server?: string;
  /**
   * Why the channel cannot reach its target (an upstream this session does not
   * know), when it cannot: the ladder denies the call, and nothing is claimed or sent.
   */
  readonly unresolved?: string;
  /** The NAME of the credential it uses, never its value; null when it uses none. */
  readonly credential: string | null;
  /** The operation, as recorded: `tools/call`, an HTTP method, `exec`. */
  readonly method: string;
  /**
   * The channel may refuse a call at dispatch, before anything leaves (an HTTP tool's address
   * guard resolves the host then; a credential is read then): it awaits ActionDispatch.sending
   * right before it sends, so that a refusal is recorded as the denial it is, never as a dispatch.
   */
  readonly checksBeforeSending?: boolean;
  /**
   * Throws InvalidInputError for arguments the channel could never carry (an SSH
   * argument quoting cannot hold): called before anything is claimed, so such a
   * call is refused with nothing recorded or sent.
   */
  check?(args: Record<string, unknown>): void;
  dispatch(args: Record<string, unknown>, ctx: ActionDispatch): Promise<ToolResult>;
  /**
   * How to learn the outcome of an execution that became unknown without
   * running it again (the SSH marker); a `status` contract without its own probe uses it.
   */
  readonly recover?: StatusProbe;
  /** Releases what the channel holds open (connection pools); called when the gateway or Idem closes. */
  close?(): Promise<void>;
}

/** A tool that an HTTP or SSH channel performs: declared in the gateway config (or in code), not listed by an upstream. */
export interface ActionTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments, validated before anything is claimed. */
  inputSchema: Tool['inputSchema'];
  /** As written; undefined gets the cautious default (`review`). */
  contract: ToolContract | undefined;
  channel: ActionChannel;
}
