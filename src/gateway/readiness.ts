import { STORE_ANSWER_MS } from '../defaults.js';
import type { UpstreamConnection, UpstreamSpec } from '../dispatch/mcp/index.js';
import type { Readiness } from '../front/health.js';
import type { ExecutionStore } from '../store/types.js';
import { unstartableReason } from './upstreams/command-check.js';

/**
 * Ready: a client can be served. The store answers a read (within 2 s); none
 * of the upstream connections given is down (being restarted); no stdio
 * upstream's command is missing (a spawn would fail: command-check.ts), though
 * nobody started it yet; and the config's tool names have not stopped every
 * tool (`configFault`, tool-names.ts).
 */
export async function readinessOf(
  store: ExecutionStore,
  connections: readonly UpstreamConnection[],
  upstreams: readonly UpstreamSpec[],
  configFault?: Error,
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
  for (const spec of upstreams) if (unstartableReason(spec)) down.add(spec.name);
  return {
    ready: storeAnswers && down.size === 0 && !configFault,
    store: storeAnswers ? 'ok' : 'unreachable',
    upstreams: { configured: upstreams.length, down: down.size },
    ...(configFault ? { config: 'invalid' as const } : {}),
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
