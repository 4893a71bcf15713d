import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ProbeAnswer, StatusProbe } from '../../contracts/contract.js';
import type { ProxySession } from '../sessions/session.js';

/**
 * A status probe declared in the config (`status_probe: { tool, arguments }`):
 * asks an upstream tool, through any live session, what became of an execution
 * whose outcome is unknown, with `{execution_id}` in the arguments replaced by
 * its id. No session can ask, or the tool answers an error: still unknown.
 */
export function declaredProbe(
  sessions: Iterable<ProxySession>,
  probe: { tool: string; arguments?: Record<string, unknown> },
): StatusProbe {
  return async ({ executionId }): Promise<ProbeAnswer> => {
    const args = JSON.parse(JSON.stringify(probe.arguments ?? {}).replaceAll('{execution_id}', executionId));
    for (const session of sessions) {
      const result = (await session.callUpstreamTool(probe.tool, args).catch(() => undefined)) as
        | CallToolResult
        | undefined;
      if (!result) continue;
      return result.isError ? { outcome: 'unknown' } : { outcome: 'completed', result };
    }
    return { outcome: 'unknown' };
  };
}
