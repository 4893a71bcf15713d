import type { JSONRPCRequest, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConnection } from '../../dispatch/mcp/index.js';
import { statusToolDefinition } from '../../executions/status-tool.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import type { ToolLookup } from '../tool-calls/call-context.js';
import type { SessionState } from './session-state.js';

export async function toolsList(s: SessionState, request: JSONRPCRequest): Promise<void> {
  const cursor = (request.params as { cursor?: string } | undefined)?.cursor;
  const tools: Tool[] = [];
  let nextCursor: string | undefined;
  try {
    const only = s.prefixed ? undefined : [...s.upstreams.entries()][0];
    if (only) {
      const [name, upstream] = only;
      const page = await listPage(upstream, cursor);
      if (page.error) return s.send({ jsonrpc: '2.0', id: request.id, error: page.error });
      if (cursor === undefined) s.catalog.clear(name);
      const entries = s.catalog.add(name, page.tools, page.nextCursor !== undefined);
      tools.push(...entries.map((entry) => s.catalog.publish(entry)));
      nextCursor = page.nextCursor;
    } else if (s.prefixed) {
      for (const [name, upstream] of s.upstreams) {
        const listed = await listAll(upstream).catch(() => undefined);
        // An upstream that is down (restarting) keeps the tools it had: they come back with it.
        if (listed) {
          s.catalog.clear(name);
          s.catalog.add(name, listed);
        }
        tools.push(
          ...s.catalog
            .entries()
            .filter((entry) => entry.upstream === name)
            .map((entry) => s.catalog.publish(entry)),
        );
      }
    }
  } catch (error) {
    return s.replyError(request.id, -32603, `tools/list failed upstream: ${String(error)}`);
  }
  // The listing may have shown that the config names a tool nobody publishes: the gateway is stopping.
  const fault = s.ctx.configFault?.();
  if (fault) return s.replyError(request.id, -32603, fault.message);
  if (cursor === undefined) {
    // The gateway's own tools come with the first page: action tools, then the status tool.
    tools.push(...s.catalog.actionEntries().map((entry) => s.catalog.publish(entry)));
    tools.push(statusToolDefinition(s.ctx.statusTool));
  }
  return s.reply(request.id, { tools, ...(nextCursor ? { nextCursor } : {}) });
}

/** Every page of an upstream's tools (an error answer ends the list); throws if the upstream is down. */
export async function listAll(upstream: UpstreamConnection): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPage(upstream, cursor);
    if (page.error) break;
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

export async function listPage(upstream: UpstreamConnection, cursor: string | undefined) {
  const reply = await upstream.request('tools/list', cursor ? { cursor } : undefined);
  if ('error' in reply) return { tools: [] as Tool[], error: reply.error };
  const result = reply.result as { tools?: Tool[]; nextCursor?: string };
  // An upstream's own status tool is left out by the catalog (isUpstreamStatusTool).
  return { tools: result.tools ?? [], nextCursor: result.nextCursor, error: undefined };
}

/**
 * A tool by the name the client sees. One not in the catalog is listed
 * again; an upstream that is down (restarting) is waited for, up to
 * `upstreamWaitMs`, since the tool may be one of its. `unlisted` names the
 * upstreams whose tools could still not be listed.
 */
export async function lookUpTool(
  s: SessionState,
  name: string,
): Promise<{ entry: CatalogEntry | undefined; unlisted: string[] }> {
  const known = s.catalog.get(name);
  if (known) return { entry: known, unlisted: [] };
  let unlisted = await refreshCatalog(s, [...s.upstreams.keys()]);
  if (!s.catalog.get(name) && unlisted.length > 0) {
    await Promise.all(
      unlisted.map((u) =>
        s.upstreams
          .get(u)
          ?.whenReady(s.ctx.upstreamWaitMs)
          .catch(() => {}),
      ),
    );
    unlisted = await refreshCatalog(s, unlisted);
  }
  return { entry: s.catalog.get(name), unlisted };
}

/** Lists the tools of these upstreams into the catalog; returns those that could not be asked (down). */
export async function refreshCatalog(s: SessionState, names: string[]): Promise<string[]> {
  const unlisted: string[] = [];
  for (const name of names) {
    const upstream = s.upstreams.get(name);
    if (!upstream) continue;
    if (!upstream.available) {
      unlisted.push(name);
      continue;
    }
    try {
      s.catalog.add(name, await listAll(upstream));
    } catch {
      unlisted.push(name);
    }
  }
  return unlisted;
}

/** A session's tools for its calls (CallContext.catalog): looked up, and the config's fault, which stops every tool. */
export class SessionTools implements ToolLookup {
  readonly #s: SessionState;

  constructor(s: SessionState) {
    this.#s = s;
  }

  async lookUp(
    name: string,
  ): Promise<{ entry: CatalogEntry | undefined; unlisted: string[]; fault?: Error }> {
    const found = await lookUpTool(this.#s, name);
    // The listing may have shown that the config names a tool nobody publishes: the gateway is stopping.
    const fault = this.#s.ctx.configFault?.();
    return fault ? { ...found, fault } : found;
  }
}
