/** What one fixture process keeps across its server instances (sessions, per-request servers, connections). */
import { createRequestStateCodec, type ServerNotifier } from '@modelcontextprotocol/server';

/** What a multi-round-trip tool seals into its requestState between rounds. */
export type MrtrState = { kind: string; round?: number; name?: string };

/** State shared by every instance of one fixture process: what the effect tools did. */
export interface FixtureState {
  counters: Map<string, number>;
  /** Resource URIs a 2025 session subscribed to (per process: the suite uses one session). */
  subscriptions: Set<string>;
  /**
   * Seals requestState. One key per process: 2026-07-28 builds a fresh server
   * per request, so every instance must verify what another minted.
   */
  stateCodec: ReturnType<typeof createRequestStateCodec<MrtrState>>;
  /** Publishes list changes to open subscriptions/listen streams (HTTP only; set once the handler exists). */
  notifier?: ServerNotifier;
}

export function newFixtureState(): FixtureState {
  return {
    counters: new Map(),
    subscriptions: new Set(),
    stateCodec: createRequestStateCodec<MrtrState>({
      key: crypto.getRandomValues(new Uint8Array(32)),
      ttlSeconds: 600,
    }),
  };
}
