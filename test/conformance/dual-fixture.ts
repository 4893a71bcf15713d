/**
 * The dual-revision fixture's server, built on the official v2 SDK
 * (`@modelcontextprotocol/server` 2.x): every tool, resource and prompt that
 * the conformance suite's server scenarios call under `--requirements
 * 2025-11-25` and `--requirements 2026-07-28`, plus the effect tools
 * (counters) the gateway tests count with. They are registered by subject:
 * dual-fixture-tools.ts, dual-fixture-input-required.ts and
 * dual-fixture-resources-prompts.ts; what a process keeps across instances is
 * dual-fixture-state.ts.
 *
 * One factory serves both revisions: the SDK serves 2026-07-28 per request
 * (input_required, cache hints, subscriptions/listen) and 2025-era sessions
 * from the same registrations; a handler that returns `inputRequired(...)`
 * reaches a 2025 client through the SDK's legacy shim (pushed requests).
 * Serving (HTTP, stdio) lives in dual-fixture-server.ts.
 *
 * The tools, resources and prompts it shares with fixture-server.ts are
 * written again here on the v2 API on purpose: the v1 fixture stays the
 * reference of 0.1.16's suite and the upstream of the existing gateway tests
 * (what a v1 server does is what they pin); folding the two is a later step.
 */
import { McpServer } from '@modelcontextprotocol/server';
import {
  registerDiagnosticTools,
  registerHeaderTool,
  registerInputRequiredTools,
} from './dual-fixture-input-required.js';
import { registerPrompts, registerResources } from './dual-fixture-resources-prompts.js';
import type { DualFixtureState } from './dual-fixture-state.js';
import { registerContentTools, registerEffectTools, registerInteractiveTools } from './dual-fixture-tools.js';

export { type DualFixtureState, newDualFixtureState } from './dual-fixture-state.js';

/** One McpServer; HTTP builds one per 2025 session and one per 2026 request, stdio one per connection. */
export function createDualFixtureServer(state: DualFixtureState): McpServer {
  const server = new McpServer(
    { name: 'idem-dual-fixture', version: '1.0.0' },
    {
      capabilities: {
        logging: {},
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        completions: {},
      },
      instructions:
        'Dual-revision fixture (2025-11-25 and 2026-07-28) for the conformance suite and Idem tests.',
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
