/**
 * The MCP Inspector's CLI (`mcpdo`, a second, independent client on Node 22)
 * lists and calls tools THROUGH the gateway — over stdio, with
 * `idem gateway -- <fixture>` as the server command the Inspector spawns, and
 * over Streamable HTTP at the gateway's URL. The fixture is the conformance
 * fixture (test/conformance/fixture-server.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureStdioCommand } from '../conformance/harness.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { InspectorError, InspectorSession, type InspectorTarget } from '../support/inspector.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf } from '../support/tool-results.js';

interface Target {
  target: InspectorTarget;
  gateway?: RunningGateway;
}

describe.each<[string, () => Promise<Target>]>([
  [
    'stdio (idem gateway -- <fixture> as the server command)',
    async () => {
      const fixture = fixtureStdioCommand();
      const cli = idemCommand(['gateway', '--', fixture.command, ...fixture.args]);
      return {
        target: {
          command: cli.command,
          args: cli.args,
          cwd: cli.cwd,
          env: { IDEM_DATA_DIR: freshDir('inspector-stdio') },
        },
      };
    },
  ],
  [
    'Streamable HTTP (the gateway URL)',
    async () => {
      const gateway = await startHttpGateway({ upstreams: { fixture: fixtureStdioCommand() } });
      return { target: { url: gateway.url }, gateway };
    },
  ],
])('MCP Inspector (mcpdo) through idem gateway over %s', (_transport, start) => {
  let started: Target | undefined;
  let inspector: InspectorSession | undefined;

  beforeAll(async () => {
    started = await start();
    inspector = await InspectorSession.open(started.target);
  }, 120_000);
  afterAll(async () => {
    await inspector?.close();
    await started?.gateway?.close();
    removeTemporaries();
  });

  it('lists the upstream tools, the status tool and honest annotations', async () => {
    const { tools } = await inspector!.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['test_simple_text', 'increment_counter', 'read_counter', 'json_schema_2020_12_tool'])
      expect(byName.has(name), name).toBe(true);
    expect(byName.get('idem_execution_status')).toMatchObject({
      inputSchema: { type: 'object', required: ['ref'] },
      // Not read-only: its `action: "repeat"` runs an action again.
      annotations: { readOnlyHint: false, idempotentHint: true },
    });
    expect(byName.get('increment_counter')?.annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: false,
    });
    expect(byName.get('read_counter')?.annotations).toMatchObject({ readOnlyHint: true });
    // Schemas pass through untouched.
    expect(byName.get('json_schema_2020_12_tool')?.inputSchema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $defs: { address: { type: 'object' } },
      additionalProperties: false,
    });
  });

  it('calls tools: content passes through; a repeated intent is answered from the store, not run again', async () => {
    expect(await inspector!.callTool('test_simple_text')).toMatchObject({
      content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
    });
    const key = `inspector-${Date.now()}`;
    const first = await inspector!.callTool('increment_counter', { key });
    expect(first.structuredContent).toEqual({ key, value: 1 });
    const ref = first._meta?.['io.idem/execution-id'];
    expect(ref).toMatch(/^exe_/);
    // Directly against the fixture this second call counts 2 (test/inspector.test.ts); through the gateway it is the same intent.
    const second = await inspector!.callTool('increment_counter', { key });
    expect(second.structuredContent).toEqual({ key, value: 1 });
    expect(second._meta).toMatchObject({ 'io.idem/replayed': true, 'io.idem/execution-id': ref });
    expect(await inspector!.callTool('read_counter', { key })).toMatchObject({
      structuredContent: { value: 1 },
    });
    // The status tool answers with the stored result.
    const status = await inspector!.callTool('idem_execution_status', { ref });
    expect(status.structuredContent).toEqual({ key, value: 1 });
  });

  it('an upstream error result, an Idem answer, and an unknown tool', async () => {
    expect(await inspector!.callTool('test_error_handling')).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
    });
    const unknown = await inspector!.callTool('idem_execution_status', { ref: 'exe_NOPE' });
    expect(unknown.isError).toBe(true);
    expect(idemOf(unknown)).toMatchObject({ code: 'IDEM_UNKNOWN_EXECUTION' });
    await expect(inspector!.callTool('no_such_tool')).rejects.toMatchObject({
      name: InspectorError.name,
      code: 'tool_not_found',
    });
  });
});
