import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamLifecycle, UpstreamReply, UpstreamRestart } from '../../dispatch/mcp/index.js';
import type { SkippedLine } from '../../dispatch/mcp/stdout-lines.js';
import { messageOf } from '../../errors.js';
import { renderRequestId } from '../../identity/request-key.js';
import { forUpstream } from '../../protocol/upstream-params.js';
import { roundAsking } from '../revisions/input-rounds.js';
import type { ForwardedRequest } from '../tool-calls/call-context.js';
import { unprefixed } from './routing.js';
import type { SessionContext, SessionState, SharedUpstreams } from './session-state.js';
import { routeToSubscriptions } from './subscriptions.js';

/** Passes a request to an upstream and its reply back, ids translated both ways. */
export async function forward(
  s: SessionState,
  request: JSONRPCRequest,
  upstreamName: string | undefined,
  /** Headers of the upstream request's own POST (a tool's `Mcp-Param-*`), for an HTTP upstream. */
  headers?: Record<string, string>,
): Promise<void> {
  const upstream = upstreamName ? s.upstreams.get(upstreamName) : undefined;
  if (!upstream) return s.replyError(request.id, -32601, `Method not found: ${request.method}`);
  const meta = (request.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const forwarded = s.track(request.id, upstream.name, meta, false);
  try {
    const params = unprefixed(s.prefixed, request);
    const { upstreamMeta } = forwarded;
    // Nothing the gateway answers itself goes on (a client's task, Idem's own _meta): protocol/upstream-params.ts.
    const reply = await upstream.request(
      request.method,
      forUpstream(upstreamMeta === meta ? params : { ...params, _meta: upstreamMeta }),
      {
        onId: (upstreamId) => {
          forwarded.upstreamId = upstreamId;
        },
        ...(headers ? { headers } : {}),
      },
    );
    return s.send({ ...reply, id: request.id } as JSONRPCMessage);
  } catch (error) {
    // A transport's error may quote what the upstream answered (an HTTP error's body): scrubbed.
    const message = messageOf(error);
    return s.replyError(request.id, -32603, s.ctx.secrets?.redact(message) ?? message);
  } finally {
    s.inFlight.delete(renderRequestId(request.id));
  }
}

export function handlersFor(s: SessionState, upstreamName: string) {
  return {
    onRestart: (restart: UpstreamRestart) =>
      s.ctx.onUpstreamRestart?.({
        ...restart,
        upstream: upstreamName,
        session: s.front.sessionId ?? null,
        actor: s.actor(),
      }),
    onLifecycle: (event: UpstreamLifecycle) => {
      s.ctx.onUpstreamLifecycle?.(upstreamName, s.front.sessionId ?? null, event);
      // Up at last (it could not be started when the session began): its tools are new to the client.
      if (event.kind === 'started' && s.lateUpstreams.delete(upstreamName) && !s.closed) {
        s.catalog.clear(upstreamName);
        void s.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      }
    },
    onSkippedLine: (skipped: SkippedLine) =>
      s.ctx.onUpstreamSkippedLine?.(upstreamName, s.front.sessionId ?? null, skipped),
    onRequest: (request: JSONRPCRequest, related?: RequestId | null): Promise<UpstreamReply> =>
      askClient(
        s,
        upstreamName,
        request,
        // A stdio upstream cannot say whose its request is, and one unanswered blocks it: the one
        // call in flight on the connection is asked (the same client either way, on this connection).
        related === undefined
          ? relatedTo(s, upstreamName)
          : onItsStream(s.inFlight, upstreamName, related)?.frontId,
      ),
    onNotification: (notification: JSONRPCNotification, related?: RequestId | null) => {
      if (notification.method === 'notifications/tools/list_changed') s.catalog.clear(upstreamName);
      if (notification.method === 'notifications/cancelled') {
        // The upstream cancels one of its requests to the client: our id for it is not the upstream's.
        return;
      }
      const token = (notification.params as { progressToken?: unknown } | undefined)?.progressToken;
      const request =
        notification.method === 'notifications/progress' && token !== undefined
          ? [...s.inFlight.values()].find((f) => f.progressToken === token)
          : onItsStream(s.inFlight, upstreamName, related);
      // Tied to no request: the session's standalone stream (a 2025-era session has one).
      void s.send(notification, request?.frontId);
    },
  };
}

/**
 * What the gateway's shared upstream connections (stateless fronts,
 * 2026-07-28 clients) do with what an upstream sends: progress goes to the
 * request whose (renamed) token it carries; a log message to the request
 * whose response stream the upstream sent it on, and for a 2026-07-28
 * request only at or above the level it asked for. A message tied to no
 * request is dropped: these sessions have no stream of their own, and the
 * request that happens to be in flight is not its owner (a server-wide log
 * line is no one call's). Requests to the client go to a 2026-07-28 call's
 * input round, else are refused — there is no session to ask them in.
 */
export function sharedHandlers(ctx: SessionContext, shared: SharedUpstreams, upstreamName: string) {
  const inFlightHere = () =>
    [...shared.sessions].flatMap((s) =>
      [...s.inFlight.values()].filter((f) => f.upstream === upstreamName).map((f) => ({ s, f })),
    );
  return {
    onRequest: async (request: JSONRPCRequest, related?: RequestId | null): Promise<UpstreamReply> => {
      if (request.method === 'ping') return { jsonrpc: '2.0', id: request.id, result: {} };
      // Asked during a 2026-07-28 client's call: that client answers it in its next call. Sent on
      // an HTTP upstream's standalone stream, it belongs to no call.
      const round = related === null ? undefined : roundAsking(shared, upstreamName);
      if (round) return round.ask(request);
      return {
        jsonrpc: '2.0',
        id: request.id,
        error: {
          code: -32601,
          message: `${request.method} needs a client to ask; none can be told apart on this gateway front (stateless, or no single 2026-07-28 call in flight on this upstream)`,
        },
      };
    },
    onNotification: (notification: JSONRPCNotification, related?: RequestId | null) => {
      if (notification.method === 'notifications/tools/list_changed') shared.catalog.clear(upstreamName);
      if (routeToSubscriptions(shared, shared.upstreams.get(upstreamName), notification)) return;
      const params = (notification.params ?? {}) as { progressToken?: unknown; level?: unknown };
      if (notification.method === 'notifications/progress') {
        const match = inFlightHere().find(({ f }) => f.upstreamProgressToken === params.progressToken);
        if (match) {
          void match.s.send(
            {
              ...notification,
              params: { ...params, progressToken: match.f.progressToken },
            } as JSONRPCMessage,
            match.f.frontId,
          );
        }
        return;
      }
      if (notification.method === 'notifications/message') {
        const owner = related == null ? undefined : inFlightHere().find(({ f }) => f.upstreamId === related);
        if (!owner) return;
        // By the client's revision: a 2026-07-28 request asks for a level (absent: none).
        if (owner.s.revision && !owner.s.revision.hears(params.level, owner.f.logLevel)) return;
        void owner.s.send(notification, owner.f.frontId);
      }
    },
    onRestart: (restart: UpstreamRestart) =>
      ctx.onUpstreamRestart?.({ ...restart, upstream: upstreamName, session: null, actor: null }),
    onLifecycle: (event: UpstreamLifecycle) => ctx.onUpstreamLifecycle?.(upstreamName, null, event),
    onSkippedLine: (skipped: SkippedLine) => ctx.onUpstreamSkippedLine?.(upstreamName, null, skipped),
  };
}

/** Passes an upstream's request (sampling, elicitation, roots) to the session's client, under an id of ours. */
export async function askClient(
  s: SessionState,
  upstreamName: string,
  request: JSONRPCRequest,
  related: RequestId | undefined = relatedTo(s, upstreamName),
): Promise<UpstreamReply> {
  const frontId = `idem-${s.nextFrontId++}`;
  const reply = new Promise<UpstreamReply>((resolve) => s.toClient.set(frontId, resolve));
  await s.send({ ...request, id: frontId }, related);
  return reply;
}

/**
 * The request of this session's in flight on `upstreamName` whose response
 * stream the upstream sent a message on (`related`, the connection's id for
 * it); undefined when the upstream did not say (null, or undefined: stdio).
 */
function onItsStream(
  inFlight: Map<string, ForwardedRequest>,
  upstreamName: string,
  related: RequestId | null | undefined,
): ForwardedRequest | undefined {
  if (related === null || related === undefined) return undefined;
  return [...inFlight.values()].find((f) => f.upstream === upstreamName && f.upstreamId === related);
}

/**
 * The one client request in flight on an upstream, when there is exactly one:
 * whose a stdio upstream's request to the client is (nothing else can tell).
 */
export function relatedTo(s: SessionState, upstreamName: string): RequestId | undefined {
  const candidates = [...s.inFlight.values()].filter((f) => f.upstream === upstreamName);
  return candidates.length === 1 ? candidates[0]?.frontId : undefined;
}
