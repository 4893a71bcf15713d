/**
 * The conformance fixture's server: a plain MCP server on the official v2 SDK
 * (`@modelcontextprotocol/server` 2.x, no Idem) with every tool, resource and
 * prompt that the conformance suites' server scenarios call — 0.1.16's, and
 * 0.2's under `--requirements 2025-11-25` and `--requirements 2026-07-28` —
 * plus the effect tools (counters) the gateway tests count with. Each is
 * written once, registered by subject: fixture-tools.ts,
 * fixture-input-required.ts and fixture-resources-prompts.ts; what a process
 * keeps across instances is fixture-state.ts.
 *
 * One factory serves both revision families: the SDK serves 2026-07-28 per
 * request (input_required, cache hints, subscriptions/listen) and 2025-era
 * sessions from the same registrations; a handler that returns
 * `inputRequired(...)` reaches a 2025 client through the SDK's legacy shim
 * (pushed requests). Serving (HTTP, stdio, and a 2025-only mode for the tests
 * that need an upstream of that era) lives in fixture-server.ts.
 */
import { McpServer } from '@modelcontextprotocol/server';
import {
  registerDiagnosticTools,
  registerHeaderTool,
  registerInputRequiredTools,
} from './fixture-input-required.js';
import { registerPrompts, registerResources } from './fixture-resources-prompts.js';
import type { FixtureState } from './fixture-state.js';
import { registerContentTools, registerEffectTools, registerInteractiveTools } from './fixture-tools.js';

export { type FixtureState, newFixtureState } from './fixture-state.js';

/** One McpServer; HTTP builds one per 2025 session and one per 2026 request, stdio one per connection. */
export function createFixtureServer(state: FixtureState): McpServer {
  const server = new McpServer(
    { name: 'idem-conformance-fixture', version: '1.0.0' },
    {
      capabilities: {
        logging: {},
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        completions: {},
      },
      instructions:
        'Conformance fixture (2025-11-25 and 2026-07-28) for the conformance suites and Idem tests.',
      requestState: { verify: state.stateCodec.verify },
      cacheHints: {
        'tools/list': { ttlMs: 300_000, cacheScope: 'public' },
        'prompts/list': { ttlMs: 300_000, cacheScope: 'public' },
        'resources/list': { ttlMs: 300_000, cacheScope: 'public' },
        'resources/templates/list': { ttlMs: 300_000, cacheScope: 'public' },
      },
    },
  );
  registerContentTools(server);
  registerInteractiveTools(server);
  registerInputRequiredTools(server, state);
  registerDiagnosticTools(server, state);
  registerHeaderTool(server);
  registerEffectTools(server, state);
  registerResources(server, state);
  registerPrompts(server);
  return server;
}
