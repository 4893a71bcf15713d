import type {
  InitializeResult,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { UpstreamConnection, type UpstreamReply } from '../../dispatch/mcp/index.js';
import { LATEST_LEGACY_VERSION } from '../../protocol/revisions.js';
import { ROUND_CAPABILITIES } from '../revisions/input-round.js';
import { askClient, sharedHandlers } from './forwarding.js';
import type { SessionContext, SessionState, SharedUpstreams } from './session-state.js';
import { newSubscriptionHub } from './subscription-hub.js';

/**
 * Upstreams configured `share: true`: one connection (one process) serves
 * every stateful session, instead of one per session. The connection is the
 * gateway's (initialized with its own name); requests are renumbered into its
 * id space as on any connection, progress tokens are renamed per request, and
 * what the upstream sends is routed to the session it belongs to:
 *
 * - progress: the request whose renamed token it carries;
 * - a log message, or a request for a client (elicitation, sampling, roots):
 *   the one call in flight on that upstream, when there is exactly one —
 *   otherwise whose it is cannot be told, and no other client may see or
 *   answer it (the upstream's request is refused);
 * - list_changed: every session using it (each refreshes its own list).
 *
 * Per-client state cannot be kept on one connection: `resources/subscribe`
 * is refused (and not advertised), and `logging/setLevel` is the last
 * client's for all.
 */
/** A set of shared upstream connections with none started yet: the pool's, and the stateless fronts'. */
export function emptySharedUpstreams(ctx: SessionContext): SharedUpstreams {
  return {
    upstreams: new Map(),
    catalog: ctx.newCatalog(),
    sessions: new Set(),
    nextProgressToken: 1,
    subscriptions: newSubscriptionHub(),
    rounds: new Map(),
  };
}

export async function startPooledUpstreams(ctx: SessionContext): Promise<SharedUpstreams> {
  const pool = emptySharedUpstreams(ctx);
  try {
    for (const spec of ctx.upstreams) {
      if (!ctx.pooled?.has(spec.name)) continue;
      const connection = new UpstreamConnection(spec, pooledHandlers(ctx, pool, spec.name), {
        ...(ctx.upstreamStderr ? { stderr: ctx.upstreamStderr } : {}),
        ...(ctx.secrets ? { secrets: ctx.secrets } : {}),
        ...(ctx.traffic ? { traffic: ctx.traffic } : {}),
      });
      pool.upstreams.set(spec.name, connection);
      await connection.start({
        protocolVersion: LATEST_LEGACY_VERSION,
        // What some client may answer; a client that did not declare it is not asked (pooledHandlers).
        capabilities: ROUND_CAPABILITIES,
        clientInfo: { name: 'idem-gateway', version: ctx.version },
      });
    }
  } catch (error) {
    await Promise.all([...pool.upstreams.values()].map((u) => u.close()));
    throw error;
  }
  return pool;
}

/** The session takes the pool's connection to `name`; its initialize answer is the pool's, without subscriptions. */
export async function joinPool(s: SessionState, name: string): Promise<InitializeResult> {
  const pool = await (s.ctx.pooledUpstreams?.() ??
    Promise.reject(new Error(`upstream ${name} is shared, but this gateway has no pool`)));
  const connection = pool.upstreams.get(name);
  const result = connection?.initializeResult;
  if (!connection || !result) throw new Error(`the shared upstream ${name} is not connected`);
  s.pool = pool;
  pool.sessions.add(s);
  s.upstreams.set(name, connection);
  const resources = result.capabilities.resources;
  if (!resources?.subscribe) return result;
  const { subscribe: _, ...rest } = resources;
  return { ...result, capabilities: { ...result.capabilities, resources: rest } };
}

/** Why a request may not go to a shared upstream (per-client state), or undefined. */
export function pooledRefusal(s: SessionState, upstream: string, method: string): string | undefined {
  if (s.shared || !s.ctx.pooled?.has(upstream)) return undefined;
  if (method !== 'resources/subscribe' && method !== 'resources/unsubscribe') return undefined;
  return `${method} is not available: the upstream "${upstream}" is shared between client sessions (upstreams.${upstream}.share), and a subscription is per-client state. Read the resource again instead.`;
}

const CAPABILITY_OF: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

function pooledHandlers(ctx: SessionContext, pool: SharedUpstreams, name: string) {
  const shared = sharedHandlers(ctx, pool, name);
  return {
    ...shared,
    onRequest: async (request: JSONRPCRequest, related?: RequestId | null): Promise<UpstreamReply> => {
      if (request.method === 'ping') return { jsonrpc: '2.0', id: request.id, result: {} };
      const inFlight = [...pool.sessions].flatMap((s) =>
        [...s.inFlight.values()].filter((f) => f.upstream === name).map((f) => ({ s, f })),
      );
      // The call whose response stream it came on (HTTP); a stdio upstream cannot say, and then
      // only the one call in flight can be its asker.
      const only =
        related === undefined
          ? inFlight.length === 1
            ? inFlight[0]
            : undefined
          : inFlight.find(({ f }) => related !== null && f.upstreamId === related);
      const capability = CAPABILITY_OF[request.method];
      const declared = capability
        ? (only?.s.clientCapabilities as Record<string, unknown> | undefined)?.[capability]
        : undefined;
      if (only && declared !== undefined) return askClient(only.s, name, request, only.f.frontId);
      return {
        jsonrpc: '2.0',
        id: request.id,
        error: {
          code: -32601,
          message: only
            ? `${request.method}: the client of the call in flight did not declare that it can answer it`
            : `${request.method} needs a client to ask; the upstream "${name}" is shared between sessions and ${inFlight.length} calls are in flight on it, so whose request this is cannot be told`,
        },
      };
    },
    onNotification: (notification: JSONRPCNotification, related?: RequestId | null) => {
      if (notification.method.endsWith('/list_changed')) {
        if (notification.method === 'notifications/tools/list_changed') pool.catalog.clear(name);
        for (const s of pool.sessions) {
          if (notification.method === 'notifications/tools/list_changed') s.catalog.clear(name);
          void s.send(notification as JSONRPCMessage);
        }
        return;
      }
      // Subscriptions are refused on a shared upstream: an update belongs to no session.
      if (notification.method === 'notifications/resources/updated') return;
      shared.onNotification(notification, related);
    },
  };
}
