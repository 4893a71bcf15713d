import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { UpstreamConnection } from '../dispatch/mcp/upstream.js';
import { annotationMismatches, ToolCatalog } from './catalog.js';
import { type GatewayConfig, NAME_SEPARATOR } from './config.js';
import { Gateway } from './gateway.js';

export interface LintFinding {
  tool: string;
  message: string;
}

/**
 * `idem lint`: connects to every upstream, lists its tools, and reports every
 * annotation the contracts do not back (DESIGN §5), and every contract that
 * names no tool.
 */
export async function lintGateway(config: GatewayConfig, version: string): Promise<LintFinding[]> {
  const upstreams = Gateway.upstreamSpecs(config);
  const catalog = new ToolCatalog({
    contracts: config.tools ?? {},
    prefixed: upstreams.length > 1,
    separator: NAME_SEPARATOR,
    probeFor: () => async () => ({ outcome: 'unknown' }),
  });
  const findings: LintFinding[] = [];
  for (const spec of upstreams) {
    const connection = new UpstreamConnection(
      spec,
      {
        onRequest: async (r) => ({
          jsonrpc: '2.0',
          id: r.id,
          error: { code: -32601, message: 'idem lint answers no requests' },
        }),
        onNotification: () => {},
      },
      { stderr: 'ignore' },
    );
    try {
      await connection.start({
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'idem-lint', version },
      });
      let cursor: string | undefined;
      do {
        const reply = await connection.request('tools/list', cursor ? { cursor } : undefined);
        if ('error' in reply) throw new Error(reply.error.message);
        const page = reply.result as { tools?: Tool[]; nextCursor?: string };
        for (const entry of catalog.add(spec.name, page.tools ?? [])) {
          for (const message of annotationMismatches(entry)) findings.push({ tool: entry.name, message });
        }
        cursor = page.nextCursor;
      } while (cursor);
    } catch (error) {
      findings.push({
        tool: `(upstream ${spec.name})`,
        message: `could not list tools: ${error instanceof Error ? error.message : String(error)}`,
      });
    } finally {
      await connection.close();
    }
  }
  for (const name of Object.keys(config.tools ?? {})) {
    if (!catalog.get(name))
      findings.push({
        tool: name,
        message: `the config declares a contract for ${name}, but no upstream offers a tool of that name`,
      });
  }
  return findings;
}
