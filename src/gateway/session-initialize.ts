import type {
  ClientCapabilities,
  InitializeResult,
  JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { UpstreamConnection } from '../dispatch/mcp/upstream.js';
import { handlersFor } from './forwarding.js';
import type { SessionContext, SessionState, SharedUpstreams } from './session-state.js';

export async function initialize(s: SessionState, request: JSONRPCRequest): Promise<void> {
  if (s.ctx.shared) return s.reply(request.id, mergeInitialize(s, [...sharedResults(s)]));
  // A second initialize would start a second set of upstreams (leaking the first) and could
  // change the client name, and with it the actor, in the middle of a session.
  if (s.initialized || s.initializing) {
    return s.replyError(request.id, -32600, 'Invalid Request: the session is already initialized');
  }
  s.initializing = true;
  const params = request.params as
    | {
        clientInfo?: { name?: string; version?: string };
        protocolVersion?: string;
        capabilities?: ClientCapabilities;
      }
    | undefined;
  if (params?.clientInfo?.name) s.clientInfo = { ...s.clientInfo, clientName: params.clientInfo.name };
  s.clientCapabilities = params?.capabilities;
  const results: [string, InitializeResult][] = [];
  try {
    for (const spec of s.ctx.upstreams) {
      const connection = new UpstreamConnection(spec, handlersFor(s, spec.name), {
        ...(s.ctx.upstreamStderr ? { stderr: s.ctx.upstreamStderr } : {}),
      });
      s.upstreams.set(spec.name, connection);
      results.push([spec.name, await connection.start(request.params)]);
    }
  } catch (error) {
    // The client may try again: nothing of this attempt stays running.
    await Promise.all([...s.upstreams.values()].map((u) => u.close()));
    s.upstreams.clear();
    return s.replyError(
      request.id,
      -32603,
      `an upstream could not be started: ${error instanceof Error ? error.message : String(error)}`,
    );
  } finally {
    s.initializing = false;
  }
  s.initialized = true;
  s.ctx.onSessionEvent?.('session_start', {
    session: s.front.sessionId ?? null,
    actor: s.actor(),
    client: params?.clientInfo ?? null,
    protocol_version: results[0]?.[1].protocolVersion ?? params?.protocolVersion ?? null,
  });
  return s.reply(request.id, mergeInitialize(s, results));
}

export function* sharedResults(s: SessionState): Iterable<[string, InitializeResult]> {
  for (const [name, upstream] of s.upstreams) {
    if (upstream.initializeResult) yield [name, upstream.initializeResult];
  }
}

/** One upstream: its own answer, with tools ensured (the status tool is ours). Several: a union. */
export function mergeInitialize(s: SessionState, results: [string, InitializeResult][]): InitializeResult {
  const first = results[0]?.[1] as InitializeResult;
  if (results.length === 1) {
    return { ...first, capabilities: { ...first.capabilities, tools: first.capabilities.tools ?? {} } };
  }
  const capabilities: Record<string, unknown> = {};
  for (const [, result] of results) {
    for (const [key, value] of Object.entries(result.capabilities)) {
      capabilities[key] = { ...(capabilities[key] as object | undefined), ...(value as object) };
    }
  }
  capabilities.tools ??= {};
  return {
    protocolVersion: first.protocolVersion,
    capabilities,
    serverInfo: { name: 'idem-gateway', version: s.ctx.version },
    instructions:
      results
        .map(([name, r]) => (r.instructions ? `${name}: ${r.instructions}` : ''))
        .filter(Boolean)
        .join('\n\n') || undefined,
  } as InitializeResult;
}

/**
 * The upstream connections of a stateless front, opened once with the
 * gateway's own identity. Nothing can be asked of a client without a session:
 * an upstream's sampling or elicitation request is answered with an error.
 */
export async function startSharedUpstreams(ctx: SessionContext): Promise<SharedUpstreams> {
  const upstreams = new Map<string, UpstreamConnection>();
  const catalog = ctx.newCatalog();
  let first: InitializeResult | undefined;
  for (const spec of ctx.upstreams) {
    const connection = new UpstreamConnection(
      spec,
      {
        onRequest: async (request) =>
          request.method === 'ping'
            ? { jsonrpc: '2.0', id: request.id, result: {} }
            : {
                jsonrpc: '2.0',
                id: request.id,
                error: {
                  code: -32601,
                  message: `${request.method} needs a client session; this gateway front is stateless`,
                },
              },
        onNotification: (notification) => {
          if (notification.method === 'notifications/tools/list_changed') catalog.clear(spec.name);
        },
        onRestart: (restart) =>
          ctx.onUpstreamRestart?.({ ...restart, upstream: spec.name, session: null, actor: null }),
      },
      ctx.upstreamStderr ? { stderr: ctx.upstreamStderr } : {},
    );
    upstreams.set(spec.name, connection);
    const result = await connection.start({
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'idem-gateway', version: ctx.version },
    });
    first ??= result;
  }
  return { upstreams, catalog, initializeResult: first as InitializeResult };
}
