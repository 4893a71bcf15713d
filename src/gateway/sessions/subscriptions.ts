import type { JSONRPCNotification, JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { SUBSCRIPTION_ID_META_KEY, type SubscriptionFilter } from '@modelcontextprotocol/server';
import type { UpstreamConnection } from '../../dispatch/mcp/index.js';
import { renderRequestId } from '../../identity/request-key.js';
import { missingTasksCapability, tasksDeclaredV2 } from '../../protocol/tasks.js';
import { watchListenedTasks } from '../tasks/task-notifications.js';
import type { SessionState, SharedUpstreams } from './session-state.js';
import type { ClientSubscription } from './subscription-hub.js';

/**
 * `subscriptions/listen` (2026-07-28): a client opens one long request whose
 * stream carries the change notifications it asked for — the revision's
 * replacement for unsolicited notifications and `resources/subscribe`.
 *
 * Through the gateway a client's stream is fanned in from every upstream:
 * a 2026-07-28 upstream gets a listen request of its own (one per client
 * stream, so closing the client's stream closes it upstream); a 2025-era
 * upstream's unsolicited notifications are passed to every open stream that
 * asked for them, and its resources are subscribed to with
 * `resources/subscribe` while some stream wants them. Each notification is
 * stamped with the client's own subscription id (its listen request's id).
 */
const FILTER_OF: Record<string, keyof SubscriptionFilter> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
};

/** The part of a requested filter some upstream can honour (what its capabilities advertise). */
function honoured(
  requested: SubscriptionFilter,
  upstreams: Iterable<UpstreamConnection>,
): SubscriptionFilter {
  const caps = [...upstreams].map(
    (u) =>
      (u.initializeResult?.capabilities ?? {}) as Record<
        string,
        { listChanged?: boolean; subscribe?: boolean }
      >,
  );
  const any = (test: (c: (typeof caps)[number]) => boolean) => caps.some(test);
  const out: SubscriptionFilter = {};
  if (requested.toolsListChanged && any((c) => c.tools?.listChanged === true)) out.toolsListChanged = true;
  if (requested.promptsListChanged && any((c) => c.prompts?.listChanged === true))
    out.promptsListChanged = true;
  if (requested.resourcesListChanged && any((c) => c.resources?.listChanged === true))
    out.resourcesListChanged = true;
  if (requested.resourceSubscriptions && any((c) => c.resources?.subscribe === true))
    out.resourceSubscriptions = requested.resourceSubscriptions;
  return out;
}

/** The filter as one upstream can honour it; undefined when it offers nothing asked for. */
function filterFor(filter: SubscriptionFilter, upstream: UpstreamConnection): SubscriptionFilter | undefined {
  const own = honoured(filter, [upstream]);
  return Object.keys(own).length > 0 ? own : undefined;
}

/** What a client may ask to listen for: the SDK's filter, and the tasks extension's `taskIds` (SEP-2663). */
type ListenFilter = SubscriptionFilter & { taskIds?: string[] };

function parseFilter(params: unknown): ListenFilter | undefined {
  const notifications = (params as { notifications?: unknown } | undefined)?.notifications;
  if (!notifications || typeof notifications !== 'object' || Array.isArray(notifications)) return undefined;
  const raw = notifications as Record<string, unknown>;
  const filter: ListenFilter = {};
  for (const key of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
    if (raw[key] === undefined) continue;
    if (typeof raw[key] !== 'boolean') return undefined;
    if (raw[key]) filter[key] = true;
  }
  if (raw.resourceSubscriptions !== undefined) {
    const uris = raw.resourceSubscriptions;
    if (!Array.isArray(uris) || !uris.every((u) => typeof u === 'string')) return undefined;
    filter.resourceSubscriptions = uris as string[];
  }
  if (raw.taskIds !== undefined) {
    const ids = raw.taskIds;
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) return undefined;
    filter.taskIds = ids as string[];
  }
  return filter;
}

/**
 * Serves one `subscriptions/listen`: opens what each upstream needs,
 * acknowledges (first, with the honoured filter), and holds until the client ends
 * it (cancellation: a closed stream over HTTP, `notifications/cancelled`
 * over stdio) or the session closes. Nothing is answered then: the client
 * is gone or said it will not read an answer.
 */
export async function listen(s: SessionState, request: JSONRPCRequest): Promise<void> {
  const hub = s.shared?.subscriptions;
  const requested = parseFilter(request.params);
  if (!hub || !s.shared) return s.replyError(request.id, -32601, 'Method not found: subscriptions/listen');
  if (!requested) {
    return s.replyError(
      request.id,
      -32602,
      "Invalid params: 'notifications' is required and must be a SubscriptionFilter",
    );
  }
  // Task notifications are the tasks extension's: a stream that asks for them declares it (SEP-2663).
  if (requested.taskIds && !tasksDeclaredV2(request.params))
    return s.send({ jsonrpc: '2.0', id: request.id, error: missingTasksCapability() });
  const forwarded = s.track(request.id, '', undefined, true);
  const ended = forwarded.cancelled as AbortController;
  const subscription: ClientSubscription = {
    session: s,
    id: request.id,
    filter: honoured(requested, s.upstreams.values()),
    upstreamIds: new Map(),
    upstreamAcknowledged: new Map(),
    held: [],
  };
  s.subscriptions.set(renderRequestId(request.id), ended);
  hub.open.add(subscription);
  // Everything is listening upstream before the client is told it is: a change the client makes
  // right after the acknowledgement must reach it. (An upstream that does not acknowledge within
  // the upstream wait is not waited for longer.)
  const opening: Promise<unknown>[] = [];
  const legacy: string[] = [];
  for (const upstream of s.upstreams.values()) {
    const filter = filterFor(subscription.filter, upstream);
    if (!filter) continue;
    if (upstream.era === 'modern') {
      const acknowledged = new Promise<void>((resolve) =>
        subscription.upstreamAcknowledged.set(upstream.name, resolve),
      );
      const listening = upstream
        .request(
          'subscriptions/listen',
          { notifications: filter },
          {
            signal: ended.signal,
            onId: (upstreamId) => subscription.upstreamIds.set(upstream.name, upstreamId),
          },
        )
        // It ended on its own (closed gracefully, refused, or the upstream restarted): the other upstreams go on.
        .then(() => subscription.upstreamIds.delete(upstream.name))
        .catch(() => subscription.upstreamIds.delete(upstream.name));
      opening.push(Promise.race([acknowledged, listening]));
    } else if (filter.resourceSubscriptions) {
      legacy.push(upstream.name);
      for (const uri of filter.resourceSubscriptions)
        opening.push(subscribeLegacy(s.shared, upstream, uri, +1));
    }
  }
  await within(Promise.all(opening), s.ctx.upstreamWaitMs);
  const tasks = requested.taskIds
    ? await watchListenedTasks(s, requested.taskIds, (notification) => deliver(subscription, notification))
    : undefined;
  await s.send(
    stamped(
      {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { ...subscription.filter, ...(tasks ? { taskIds: tasks.agreed } : {}) } },
      },
      request.id,
    ),
    request.id,
  );
  const held = subscription.held ?? [];
  subscription.held = undefined;
  for (const notification of held) deliver(subscription, notification);
  if (!ended.signal.aborted)
    await new Promise((resolve) => ended.signal.addEventListener('abort', resolve, { once: true }));
  tasks?.end();
  hub.open.delete(subscription);
  s.subscriptions.delete(renderRequestId(request.id));
  s.inFlight.delete(renderRequestId(request.id));
  for (const name of legacy) {
    const upstream = s.upstreams.get(name);
    for (const uri of subscription.filter.resourceSubscriptions ?? [])
      if (upstream) await subscribeLegacy(s.shared, upstream, uri, -1);
  }
}

/** `resources/subscribe` on a 2025-era upstream for the first stream that wants a resource, unsubscribe after the last. */
async function subscribeLegacy(
  shared: SharedUpstreams,
  upstream: UpstreamConnection,
  uri: string,
  change: 1 | -1,
): Promise<void> {
  const key = `${upstream.name}\n${uri}`;
  const before = shared.subscriptions.legacyResources.get(key) ?? 0;
  const after = Math.max(0, before + change);
  if (after === 0) shared.subscriptions.legacyResources.delete(key);
  else shared.subscriptions.legacyResources.set(key, after);
  if (before === 0 && after === 1)
    await upstream.request('resources/subscribe', { uri }).catch(() => undefined);
  if (before === 1 && after === 0)
    await upstream.request('resources/unsubscribe', { uri }).catch(() => undefined);
}

/**
 * Routes a notification from a shared upstream to the listen streams it
 * belongs to. True if it was a listen-stream notification (handled here).
 */
export function routeToSubscriptions(
  shared: SharedUpstreams,
  upstream: UpstreamConnection | undefined,
  notification: JSONRPCNotification,
): boolean {
  const params = (notification.params ?? {}) as { _meta?: Record<string, unknown>; uri?: unknown };
  const upstreamSubscription = params._meta?.[SUBSCRIPTION_ID_META_KEY];
  if (upstream?.era === 'modern' || upstreamSubscription !== undefined) {
    if (upstreamSubscription === undefined) return false;
    for (const sub of shared.subscriptions.open) {
      if (!upstream || sub.upstreamIds.get(upstream.name) !== upstreamSubscription) continue;
      // The upstream's acknowledgement is not the client's: the client gets the gateway's, once all are in.
      if (notification.method === 'notifications/subscriptions/acknowledged')
        sub.upstreamAcknowledged.get(upstream.name)?.();
      else deliver(sub, notification);
    }
    return true;
  }
  const key = FILTER_OF[notification.method];
  const isUpdate = notification.method === 'notifications/resources/updated';
  if (!key && !isUpdate) return false;
  for (const sub of shared.subscriptions.open) {
    const wanted = key
      ? sub.filter[key] === true
      : typeof params.uri === 'string' && (sub.filter.resourceSubscriptions ?? []).includes(params.uri);
    if (wanted) deliver(sub, notification);
  }
  return true;
}

function deliver(sub: ClientSubscription, notification: JSONRPCNotification): void {
  if (sub.held) sub.held.push(notification);
  else void sub.session.send(stamped(notification, sub.id), sub.id);
}

/** Waits for `work`, at most `ms` (it goes on regardless). */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([work.catch(() => undefined), timeout]);
  clearTimeout(timer);
}

/** A notification as a listen stream carries it: with the stream's subscription id in `_meta`. */
function stamped(notification: JSONRPCNotification, id: RequestId): JSONRPCNotification {
  const params = (notification.params ?? {}) as { _meta?: Record<string, unknown> };
  return {
    jsonrpc: '2.0',
    method: notification.method,
    params: { ...params, _meta: { ...params._meta, [SUBSCRIPTION_ID_META_KEY]: id } },
  };
}
