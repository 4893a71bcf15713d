import { recordedTaskFollower } from '../../dispatch/mcp/index.js';
import type { UpstreamTaskFollowers } from '../../executions/resume.js';
import type { ProtocolEra } from '../../protocol/revisions.js';
import type { GatewayConfig } from '../config/config.js';
import type { SharedUpstreams } from '../sessions/session.js';

/** The gateway-wide connections (opened on first use): per revision family, and those of `share: true` upstreams. */
export interface GatewayConnections {
  shared(era: ProtocolEra): Promise<SharedUpstreams>;
  pooled(): Promise<SharedUpstreams>;
}

/** How long to wait for an upstream that is (re)starting (as a session's call does). */
const UPSTREAM_WAIT_MS = 2_000;

/**
 * What the engine follows a lost holder's upstream task with (executions/resume.ts): the
 * gateway-wide connection to the upstream the task was recorded under — a 2026-07-28 task over
 * the connections that speak that revision, a 2025-11-25 one over the others. An upstream the
 * config no longer names: none (its outcome is then unknown). One that cannot be reached now:
 * thrown, so the execution waits for the next pass, not taken over.
 */
export function taskFollowers(
  upstreams: GatewayConfig['upstreams'],
  connections: GatewayConnections,
): UpstreamTaskFollowers {
  return async (handle) => {
    const spec = Object.hasOwn(upstreams, handle.upstream) ? upstreams[handle.upstream] : undefined;
    if (!spec) return undefined;
    const era: ProtocolEra = handle.generation === 'v2' ? 'modern' : 'legacy';
    const set = spec.share ? await connections.pooled() : await connections.shared(era);
    const connection = set.upstreams.get(handle.upstream);
    if (!connection) throw new Error(`the upstream "${handle.upstream}" is not connected`);
    await connection.whenReady(UPSTREAM_WAIT_MS);
    return recordedTaskFollower(connection);
  };
}
