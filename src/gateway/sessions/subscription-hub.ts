import type { JSONRPCMessage, JSONRPCNotification, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { SubscriptionFilter } from '@modelcontextprotocol/server';

// What the gateway keeps about open `subscriptions/listen` streams (subscriptions.ts serves them).

export interface ClientSubscription {
  /** Where its notifications go: the session of the client's listen request. */
  session: { send(message: JSONRPCMessage, relatedRequestId?: RequestId): Promise<void> };
  /** The client's listen request id: the subscription id its notifications carry. */
  id: RequestId;
  filter: SubscriptionFilter;
  /** The listen request made of each 2026-07-28 upstream for this stream, by upstream name. */
  upstreamIds: Map<string, RequestId>;
  /** Told when an upstream acknowledged its listen request, by upstream name. */
  upstreamAcknowledged: Map<string, () => void>;
  /** What arrived before the client's acknowledgement (which must come first); sent right after it. */
  held: JSONRPCNotification[] | undefined;
}

/** What the shared upstream connections keep about open listen streams. */
export interface SubscriptionHub {
  open: Set<ClientSubscription>;
  /** How many open streams want each resource of a 2025-era upstream (`${upstream}\n${uri}`). */
  legacyResources: Map<string, number>;
}

export function newSubscriptionHub(): SubscriptionHub {
  return { open: new Set(), legacyResources: new Map() };
}
