import type {
  ClientCapabilities,
  InitializeResult,
  JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { UpstreamConnection, type UpstreamHandlers, type UpstreamOptions } from '../../dispatch/mcp/index.js';
import { messageOf } from '../../errors.js';
import { discoverResultOf } from '../../protocol/discover-as-initialize.js';
import {
  isModernVersion,
  LATEST_LEGACY_VERSION,
  legacyVersionFor,
  type ProtocolEra,
} from '../../protocol/revisions.js';
import { tasksCapabilityV1 } from '../../protocol/task-requests.js';
import { TASKS_EXTENSION } from '../../protocol/tasks.js';
import type { ToolCatalog } from '../catalog/catalog.js';
import { LEGACY } from '../revisions/client-revision.js';
import { ROUND_CAPABILITIES } from '../revisions/input-round.js';
import { handlersFor, sharedHandlers } from './forwarding.js';
import { emptySharedUpstreams, joinPool } from './pooled-upstreams.js';
import type { SessionContext, SessionState, SharedUpstreams } from './session-state.js';

export async function initialize(s: SessionState, request: JSONRPCRequest): Promise<void> {
  s.revision = LEGACY;
  if (s.shared) {
    // The shared upstreams were initialized once, by the gateway: the client still gets the
    // revision it asked for, when the gateway speaks it.
    const requested = (request.params as { protocolVersion?: unknown } | undefined)?.protocolVersion;
    return s.reply(request.id, {
      ...mergeInitialize(s, [...sharedResults(s)]),
      protocolVersion: legacyVersionFor(requested),
    });
  }
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
  let results: [string, InitializeResult][];
  try {
    // A shared upstream (upstreams.<name>.share) is joined, not started: the gateway's pool holds its one process.
    const started = await startAll(
      s.ctx,
      s.upstreams,
      (name) => handlersFor(s, name),
      {},
      request.params,
      (name) => (s.ctx.pooled?.has(name) ? joinPool(s, name) : undefined),
      s.ctx.spareFor,
    );
    results = started.results;
    if (!servesSomething(s.catalog, started)) {
      // The client may try again: nothing of this attempt stays running (the pool is not this session's).
      await Promise.all([...s.upstreams].filter(([name]) => s.owns(name)).map(([, u]) => u.close()));
      s.upstreams.clear();
      s.release();
      const reason = nothingStartedText(started.failed);
      s.ctx.onInitializeRefused?.(s.front.sessionId ?? null, reason);
      return s.replyError(request.id, -32603, reason);
    }
    for (const [name] of started.failed) s.lateUpstreams.add(name);
  } finally {
    s.initializing = false;
  }
  s.initialized = true;

  const merged = mergeInitialize(s, results);
  // A 2026-07-28 upstream said its revision through server/discover: the client still gets one of its own era.
  return s.reply(request.id, {
    ...merged,
    protocolVersion:
      merged.protocolVersion === undefined || isModernVersion(merged.protocolVersion)
        ? legacyVersionFor(params?.protocolVersion)
        : merged.protocolVersion,
  });
}

interface Started {
  results: [string, InitializeResult][];
  failed: [string, unknown][];
}

/**
 * Starts every upstream at once. One that fails costs only its own tools: its
 * connection stays, retrying with backoff (UpstreamConnection.start), and the
 * others serve.
 */
async function startAll(
  ctx: SessionContext,
  into: Map<string, UpstreamConnection>,
  handlers: (name: string) => UpstreamHandlers,
  options: UpstreamOptions,
  params: JSONRPCRequest['params'],
  join?: (name: string) => Promise<InitializeResult> | undefined,
  /** A session's own connections only: a process of the upstream started ahead, if one waits. */
  spareFor?: SessionContext['spareFor'],
): Promise<Started> {
  const attempts = ctx.upstreams.map(async (spec): Promise<[string, InitializeResult | Error]> => {
    const joined = join?.(spec.name);
    if (joined)
      return joined.then(
        (result): [string, InitializeResult] => [spec.name, result],
        (error: unknown) => [spec.name, error instanceof Error ? error : new Error(String(error))],
      );
    const connection = new UpstreamConnection(spec, handlers(spec.name), {
      ...options,
      ...(ctx.upstreamStderr ? { stderr: ctx.upstreamStderr } : {}),
      ...(ctx.secrets ? { secrets: ctx.secrets } : {}),
      ...(ctx.traffic ? { traffic: ctx.traffic } : {}),
      ...(spareFor ? { spare: () => spareFor(spec) } : {}),
    });
    into.set(spec.name, connection);
    try {
      return [spec.name, await connection.start(params)];
    } catch (error) {
      return [spec.name, error instanceof Error ? error : new Error(String(error))];
    }
  });
  const started: Started = { results: [], failed: [] };
  for (const [name, outcome] of await Promise.all(attempts)) {
    if (outcome instanceof Error) started.failed.push([name, outcome]);
    else started.results.push([name, outcome]);
  }
  return started;
}

/** Something to serve: an upstream that started, the gateway's own action tools, or no upstream configured at all. */
function servesSomething(catalog: ToolCatalog, started: Started): boolean {
  return started.results.length > 0 || started.failed.length === 0 || catalog.actionEntries().length > 0;
}

function nothingStartedText(failed: [string, unknown][]): string {
  const each = failed.map(([name, error]) => `${name}: ${messageOf(error)}`).join('; ');
  return `no upstream could be started (${each}); the gateway's log says more`;
}

/**
 * `server/discover` (2026-07-28): what `initialize` answered a 2025-era
 * client, as this revision says it (see discoverResultOf).
 */
export function discover(s: SessionState, request: JSONRPCRequest): Promise<void> {
  // The gateway serves subscriptions/listen: what the upstreams can announce is advertised.
  const result = discoverResultOf(mergeInitialize(s, [...sharedResults(s)]), { subscriptions: true });
  const capabilities = result.capabilities as Record<string, unknown>;
  // Tasks are the gateway's own, in this revision's form (the extension, never `capabilities.tasks`).
  capabilities.extensions = { ...(capabilities.extensions as object | undefined), [TASKS_EXTENSION]: {} };
  return s.reply(request.id, result);
}

export function* sharedResults(s: SessionState): Iterable<[string, InitializeResult]> {
  for (const [name, upstream] of s.upstreams) {
    if (upstream.initializeResult) yield [name, upstream.initializeResult];
  }
}

/**
 * One upstream: its own answer, with tools ensured (the status tool is ours). Several: a union.
 * While a configured upstream is not serving, `tools.listChanged` is announced: its tools come
 * with it. No upstream (action tools only): the gateway's own answer, protocolVersion left to the caller.
 * Tasks are the gateway's own, whatever an upstream says: a client's task is Idem's, backed by its
 * store, and an upstream's task is followed by the gateway, never shown.
 */
export function mergeInitialize(s: SessionState, results: [string, InitializeResult][]): InitializeResult {
  const first = results[0]?.[1] as InitializeResult;
  const late = results.length < s.ctx.upstreams.length ? { listChanged: true } : {};
  if (results.length === 1 && !s.prefixed) {
    return {
      ...first,
      capabilities: {
        ...first.capabilities,
        tools: first.capabilities.tools ?? {},
        tasks: tasksCapabilityV1(),
      },
    };
  }
  const capabilities: Record<string, unknown> = {};
  for (const [, result] of results) {
    for (const [key, value] of Object.entries(result.capabilities)) {
      capabilities[key] = { ...(capabilities[key] as object | undefined), ...(value as object) };
    }
  }
  capabilities.tools = { ...(capabilities.tools as object | undefined), ...late };
  capabilities.tasks = tasksCapabilityV1();
  return {
    protocolVersion: first?.protocolVersion,
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
export async function startSharedUpstreams(
  ctx: SessionContext,
  prefer: ProtocolEra,
): Promise<SharedUpstreams> {
  const shared = emptySharedUpstreams(ctx);
  const started = await startAll(
    ctx,
    shared.upstreams,
    (name) => sharedHandlers(ctx, shared, name),
    { prefer },
    {
      protocolVersion: LATEST_LEGACY_VERSION,
      // 2026-07-28 clients answer a 2025-era upstream's requests through input rounds
      // (revisions/input-rounds.ts): what any of them may answer is declared, and a request a given
      // client did not declare is refused to the upstream then. Stateless 2025-era clients cannot
      // be asked anything.
      capabilities: prefer === 'modern' ? ROUND_CAPABILITIES : {},
      clientInfo: { name: 'idem-gateway', version: ctx.version },
    },
  );
  if (!servesSomething(shared.catalog, started)) {
    await Promise.all([...shared.upstreams.values()].map((u) => u.close()));
    throw new Error(nothingStartedText(started.failed));
  }
  return shared;
}
