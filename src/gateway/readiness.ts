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
