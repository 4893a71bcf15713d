import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamReply, UpstreamRestart } from '../dispatch/mcp/upstream.js';
import { messageOf } from '../errors.js';
import { renderRequestId } from '../identity/request-key.js';
import { unprefixed } from './routing.js';
import type { ForwardedRequest, SessionState } from './session-state.js';

/** Passes a request to an upstream and its reply back, ids translated both ways. */
export async function forward(
  s: SessionState,
  request: JSONRPCRequest,
  upstreamName: string | undefined,
): Promise<void> {
  const upstream = upstreamName ? s.upstreams.get(upstreamName) : undefined;
  if (!upstream) return s.replyError(request.id, -32601, `Method not found: ${request.method}`);
  const forwarded: ForwardedRequest = { frontId: request.id, upstream: upstream.name };
  const progressToken = (request.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta
    ?.progressToken;
  if (typeof progressToken === 'string' || typeof progressToken === 'number')
    forwarded.progressToken = progressToken;
  s.inFlight.set(renderRequestId(request.id), forwarded);
  try {
    const reply = await upstream.request(
      request.method,
      unprefixed(s.prefixed, request),
      undefined,
      (upstreamId) => {
        forwarded.upstreamId = upstreamId;
      },
    );
    return s.send({ ...reply, id: request.id } as JSONRPCMessage);
  } catch (error) {
    return s.replyError(request.id, -32603, messageOf(error));
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
    onRequest: async (request: JSONRPCRequest): Promise<UpstreamReply> => {
      const frontId = `idem-${s.nextFrontId++}`;
      const reply = new Promise<UpstreamReply>((resolve) => s.toClient.set(frontId, resolve));
      await s.send({ ...request, id: frontId }, relatedTo(s, upstreamName));
      return reply;
    },
    onNotification: (notification: JSONRPCNotification) => {
      if (notification.method === 'notifications/tools/list_changed') s.catalog.clear(upstreamName);
      if (notification.method === 'notifications/cancelled') {
        // The upstream cancels one of its requests to the client: our id for it is not the upstream's.
        return;
      }
      const token = (notification.params as { progressToken?: unknown } | undefined)?.progressToken;
      const related =
        notification.method === 'notifications/progress' && token !== undefined
          ? [...s.inFlight.values()].find((f) => f.progressToken === token)?.frontId
          : relatedTo(s, upstreamName);
      void s.send(notification, related);
    },
  };
}

/** The client request an upstream's message belongs to, when that is unambiguous. */
export function relatedTo(s: SessionState, upstreamName: string): RequestId | undefined {
  const candidates = [...s.inFlight.values()].filter((f) => f.upstream === upstreamName);
  return candidates.length === 1 ? candidates[0]?.frontId : undefined;
}
