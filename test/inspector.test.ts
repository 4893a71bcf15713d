import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureStdioCommand, type RunningServer, startFixture } from './conformance/harness.js';
import { InspectorError, InspectorSession, type InspectorTarget } from './support/inspector.js';

interface Target {
  target: InspectorTarget;
  server?: RunningServer;
}

/** Both transports: the fixture spawned over stdio by the Inspector, and over loopback HTTP in its own process. */
describe.each<[string, () => Promise<Target>]>([
  ['stdio', async () => ({ target: fixtureStdioCommand() })],
  [
    'Streamable HTTP',
    async () => {
      const server = await startFixture();
      return { target: { url: server.url }, server };
    },
  ],
])('MCP Inspector (mcpdo) against the fixture over %s', (_transport, start) => {
  let started: Target | undefined;
  let inspector: InspectorSession | undefined;

  beforeAll(async () => {
    started = await start();
    inspector = await InspectorSession.open(started.target);
  });
  afterAll(async () => {
    await inspector?.close();
    await started?.server?.close();
  });

  it('lists the tools with their schemas', async () => {
    const { tools } = await inspector!.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'test_simple_text',
        'test_sampling',
        'increment_counter',
        'json_schema_2020_12_tool',
      ]),
    );
    expect(tools.every((t) => typeof t.description === 'string' && t.inputSchema.type === 'object')).toBe(
      true,
    );
    const schema = tools.find((t) => t.name === 'json_schema_2020_12_tool')?.inputSchema;
    expect(schema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $defs: { address: { type: 'object' } },
      additionalProperties: false,
    });
  });

  it('calls tools: content, arguments and effects, an error result', async () => {
    expect(await inspector!.callTool('test_simple_text')).toMatchObject({
      content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
    });
    const first = await inspector!.callTool('increment_counter', { key: 'inspector' });
    const second = await inspector!.callTool('increment_counter', { key: 'inspector' });
    expect([first.structuredContent, second.structuredContent]).toEqual([
      { key: 'inspector', value: 1 },
      { key: 'inspector', value: 2 },
    ]);
    expect(await inspector!.callTool('read_counter', { key: 'inspector' })).toMatchObject({
      structuredContent: { value: 2 },
    });
    expect(await inspector!.callTool('test_error_handling')).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
    });
  });

  it('reports an unknown tool as an error', async () => {
    await expect(inspector!.callTool('no_such_tool')).rejects.toMatchObject({
      name: InspectorError.name,
      code: 'tool_not_found',
    });
  });
});
