import { actionCall, callerOf, refusedArguments } from '../../dispatch/action-call.js';
import type { ActionChannel } from '../../dispatch/channel.js';
import { McpChannel, type McpToolCall, type UpstreamConnection } from '../../dispatch/mcp/index.js';
import type { TaskRequest } from '../../executions/call.js';
import type { CallerInfo } from '../../identity/actor.js';
import { renderRequestId } from '../../identity/request-key.js';
import { metaForUpstream } from '../../protocol/upstream-params.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import { approverFor } from '../sessions/elicitation.js';
import type { ForwardedRequest, SessionState } from '../sessions/session-state.js';
import type { ToolCallAnswer } from './answer.js';
import type { RevisionHooks } from './revision-hooks.js';
import type { FoundTool } from './tool-call-checks.js';
import type { ToolCallRequest } from './tool-call-request.js';

/**
 * An effectful call through the engine: an upstream's tool or one that HTTP or
 * SSH performs, one path. The call and its caller are built once
 * (dispatch/action-call.ts) on the tool's channel; the engine claims, runs
 * and records it.
 */
export async function executeCall(
  s: SessionState,
  call: ToolCallRequest,
  { entry, upstreamHeaders }: FoundTool,
  args: Record<string, unknown>,
  bridge: RevisionHooks,
  /** Set when the client can take a task for this call. */
  task: { task?: TaskRequest } = {},
): Promise<ToolCallAnswer> {
  const forwarded = s.track(call.id, entry.upstream, call.meta, true);
  try {
    const answered = bridge.answering(call, entry, args, forwarded);
    const approver = approverFor(s, forwarded, entry.contract);
    const parts = callerParts(s, call.id, call.name, call.authInfo);
    const channel =
      entry.action?.channel ??
      upstreamChannel(
        s,
        entry,
        paramsOf(call),
        upstreamHeaders,
        forwarded,
        bridge.channelHooks(forwarded, entry),
      );
    // What the channel could never carry (an SSH argument with a NUL byte) is refused before anything is claimed.
    const refused = refusedArguments(channel, args);
    if (refused) return { result: refused };
    const prepared = actionCall(
      call.name,
      channel,
      entry.contract,
      args,
      callerOf(parts),
      forwarded.cancelled?.signal,
    );
    // An input round the bridge opened holds the call from becoming a task while its client holds the questions.
    const taskRequest =
      task.task && forwarded.inputHold ? { task: { ...task.task, hold: forwarded.inputHold } } : task;
    // Awaited here: the request stays in flight (cancellable) until it is answered.
    return await answered(
      s.ctx.engine.execute({ ...prepared.call, ...approver, ...taskRequest }, prepared.dispatch),
    );
  } finally {
    s.inFlight.delete(renderRequestId(call.id));
  }
}

function paramsOf(call: ToolCallRequest): { _meta?: Record<string, unknown> } {
  return (call.request.params ?? {}) as { _meta?: Record<string, unknown> };
}

/** Who is calling, as the engine's caller is built from it (dispatch/action-call.ts `callerOf`). */
export function callerParts(
  s: SessionState,
  requestId: ToolCallRequest['id'],
  tool: string,
  authInfo: CallerInfo['authInfo'],
) {
  return { actor: s.actor(), session: s.front.sessionId ?? null, requestId, tool, authInfo };
}

/**
 * A call of an upstream's tool as this session makes it: its progress token and
 * the client's cancellation passed on, its `Mcp-Param-*` headers, and the rounds
 * of input the upstream may ask for answered as the revision bridge says.
 */
export function upstreamChannel(
  s: SessionState,
  entry: CatalogEntry,
  /** The rest of the request's params, passed on as they came. */
  params: { _meta?: Record<string, unknown> },
  /** Its `Mcp-Param-*` headers: a 2026-07-28 HTTP upstream checks them against the arguments (SEP-2243). */
  headers: Record<string, string> | undefined,
  forwarded: ForwardedRequest,
  hooks: Pick<McpToolCall, 'answerRounds' | 'inputRequired'>,
): ActionChannel {
  return new McpChannel({
    name: entry.name,
    upstreamTool: entry.upstreamName,
    upstreamName: entry.upstream,
    upstream: s.upstreams.get(entry.upstream) as UpstreamConnection | undefined,
    params,
    upstreamTaskSupport: taskSupportOf(entry),
    timeoutMs: entry.contract.timeoutMs,
    // Nothing the gateway answers itself goes on: protocol/upstream-params.ts.
    meta: metaForUpstream(forwarded.upstreamMeta),
    headers,
    waitMs: s.ctx.upstreamWaitMs,
    onSent: (upstreamId) => {
      forwarded.upstreamId = upstreamId;
    },
    // Counted until the upstream answers, even when the engine answered the caller first (timeout).
    onDispatch: () => {
      s.working++;
      return () => {
        s.working--;
      };
    },
    ...hooks,
  });
}

/** What the upstream listed as the tool's `execution.taskSupport`, where it supports tasks at all. */
function taskSupportOf(entry: CatalogEntry): McpToolCall['upstreamTaskSupport'] {
  const support = entry.tool.execution?.taskSupport;
  return support === 'optional' || support === 'required' ? support : undefined;
}
