import { STORE_ANSWER_MS } from '../defaults.js';
import type { UpstreamConnection } from '../dispatch/mcp/index.js';
import type { Readiness } from '../front/health.js';
import type { ExecutionStore } from '../store/types.js';

/**
 * Ready: the store answers a read (within 2 s), and none of the upstream
 * connections given is down (being restarted). An upstream nobody has started
 * yet is not down: it starts with the session that needs it.
 */
export async function readinessOf(
  store: ExecutionStore,
  connections: readonly UpstreamConnection[],
  configured: number,
): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const storeAnswers = await Promise.race([
    store.get('exe_readiness_probe').then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), STORE_ANSWER_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  const down = new Set(connections.filter((c) => c.down).map((c) => c.name));
  return {
    ready: storeAnswers && down.size === 0,
    store: storeAnswers ? 'ok' : 'unreachable',
    upstreams: { configured, down: down.size },
  };
}

/** The upstream connections readiness looks at: every live session's, and every shared set opened so far. */
export async function connectionsOf(
  sessions: Iterable<{ upstreamConnections: Iterable<UpstreamConnection> }>,
  shared: Iterable<Promise<{ upstreams: Map<string, UpstreamConnection> }>>,
): Promise<UpstreamConnection[]> {
  const connections = [...sessions].flatMap((s) => [...s.upstreamConnections]);
  for (const opening of shared) {
    const set = await opening.catch(() => undefined);
    if (set) connections.push(...set.upstreams.values());
  }
  return connections;
}

/** Closes the upstream connections of every shared set opened (one that failed to open has none). */
export async function closeShared(
  shared: Iterable<Promise<{ upstreams: Map<string, UpstreamConnection> }>>,
): Promise<void> {
  for (const opening of shared) {
    const set = await opening.catch(() => undefined);
    if (set) await Promise.all([...set.upstreams.values()].map((u) => u.close()));
  }
}
