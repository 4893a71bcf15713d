/**
 * The fixture's tools that answer in one exchange: content of every kind, the
 * JSON Schema 2020-12 tool, the 2025-era push tools (logging, progress,
 * sampling and elicitation sent on the request's stream, a stream closed
 * mid-call) and the effect tools (counters) the gateway tests count with.
 */
import { fromJsonSchema, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { done, RED_PIXEL_PNG, SILENT_WAV, text } from './content.js';
import type { FixtureState } from './fixture-state.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object' as const,
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword, never awaited
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

export function registerContentTools(server: McpServer): void {
  server.registerTool('test_simple_text', { description: 'Returns a simple text response.' }, async () =>
    done('This is a simple text response for testing.'),
  );
  server.registerTool('test_image_content', { description: 'Returns a 1x1 red PNG image.' }, async () => ({
    content: [{ type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' }],
  }));
  server.registerTool('test_audio_content', { description: 'Returns a short WAV clip.' }, async () => ({
    content: [{ type: 'audio', data: SILENT_WAV, mimeType: 'audio/wav' }],
  }));
  server.registerTool(
    'test_embedded_resource',
    { description: 'Returns an embedded text resource.' },
    async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ],
    }),
  );
  server.registerTool(
    'test_multiple_content_types',
    { description: 'Returns text, image and resource content together.' },
    async () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 }),
          },
        },
      ],
    }),
  );
  server.registerTool(
    'test_error_handling',
    { description: 'Always fails: the result has isError true.' },
    async () => {
      throw new Error('This tool intentionally returns an error for testing');
    },
  );
  // Listed verbatim: the 2025 suite wants $schema, $defs and additionalProperties
  // kept (SEP-1613); the 2026 one also allOf/anyOf, if/then/else and $anchor (SEP-2106).
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: fromJsonSchema(JSON_SCHEMA_2020_12),
    },
    async (args) => done(`Received: ${JSON.stringify(args)}`),
  );
}

/** The 2025-era push tools: progress, logging, sampling and elicitation sent on the request's stream. */
export function registerInteractiveTools(server: McpServer): void {
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Sends three info log notifications while it runs.' },
    async (ctx) => {
      const messages = ['Tool execution started', 'Tool processing data', 'Tool execution completed'];
      for (const [i, data] of messages.entries()) {
        if (i > 0) await sleep(50);
        await ctx.mcpReq.log('info', data, 'fixture');
      }
      return done('Tool with logging executed successfully');
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50 and 100 of 100 when given a progress token.' },
    async (ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(50);
        if (progressToken !== undefined) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100, message: `step ${i + 1} of 3` },
          });
        }
      }
      return done('Tool with progress executed successfully');
    },
  );
  server.registerTool(
    'test_sampling',
    {
      description: 'Asks the client to sample an LLM completion for the prompt (2025 push).',
      inputSchema: z.object({ prompt: z.string().describe('The prompt to send to the LLM') }),
    },
    async ({ prompt }, ctx) => {
      const result = await ctx.mcpReq.requestSampling({
        messages: [{ role: 'user', content: text(prompt) }],
        maxTokens: 100,
      });
      const content = Array.isArray(result.content) ? result.content[0] : result.content;
      const answer = content?.type === 'text' ? content.text : JSON.stringify(result.content);
      return done(`LLM response: ${answer}`);
    },
  );
  server.registerTool(
    'test_elicitation',
    {
      description: 'Asks the client for a username and an email address (2025 push).',
      inputSchema: z.object({ message: z.string().describe('The message to show the user') }),
    },
    async ({ message }, ctx) => {
      const result = await ctx.mcpReq.elicitInput({
        message,
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      });
      return done(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
    },
  );
  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Elicitation whose schema has a default for every primitive type (SEP-1034).' },
    async (ctx) => {
      const result = await ctx.mcpReq.elicitInput({
        message: 'Please review and update the form fields with defaults',
        requestedSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'User name', default: 'John Doe' },
            age: { type: 'integer', description: 'User age', default: 30 },
            score: { type: 'number', description: 'User score', default: 95.5 },
            status: {
              type: 'string',
              description: 'User status',
              enum: ['active', 'inactive', 'pending'],
              default: 'active',
            },
            verified: { type: 'boolean', description: 'Verification status', default: true },
          },
          required: [],
        },
      });
      return done(elicitationSummary(result));
    },
  );
  server.registerTool(
    'test_elicitation_sep1330_enums',
    { description: 'Elicitation with all five enum schema variants (SEP-1330).' },
    async (ctx) => {
      const result = await ctx.mcpReq.elicitInput({
        message: 'Please select options from the enum fields',
        requestedSchema: {
          type: 'object',
          properties: {
            untitledSingle: {
              type: 'string',
              description: 'Untitled single-select',
              enum: ['option1', 'option2', 'option3'],
            },
            titledSingle: {
              type: 'string',
              description: 'Titled single-select',
              oneOf: [
                { const: 'value1', title: 'First Option' },
                { const: 'value2', title: 'Second Option' },
                { const: 'value3', title: 'Third Option' },
              ],
            },
            legacyEnum: {
              type: 'string',
              description: 'Legacy titled enum',
              enum: ['opt1', 'opt2', 'opt3'],
              enumNames: ['Option One', 'Option Two', 'Option Three'],
            },
            untitledMulti: {
              type: 'array',
              description: 'Untitled multi-select',
              items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
            },
            titledMulti: {
              type: 'array',
              description: 'Titled multi-select',
              items: {
                anyOf: [
                  { const: 'value1', title: 'First Choice' },
                  { const: 'value2', title: 'Second Choice' },
                  { const: 'value3', title: 'Third Choice' },
                ],
              },
            },
          },
          required: [],
        },
      });
      return done(elicitationSummary(result));
    },
  );
  server.registerTool(
    'test_reconnection',
    {
      description:
        'Closes its SSE stream mid-call, then answers: the client must resume with Last-Event-ID (SEP-1699).',
    },
    async (ctx) => {
      await sleep(100);
      ctx.http?.closeSSE?.();
      await sleep(200);
      return done('Reconnection test completed');
    },
  );
}

function elicitationSummary(result: { action: string; content?: unknown }): string {
  return `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
}

export function registerEffectTools(server: McpServer, state: FixtureState): void {
  server.registerTool(
    'increment_counter',
    {
      description: 'Adds one to a named counter and returns its new value (an effect, for dedup tests).',
      inputSchema: z.object({
        key: z.string().default('default').describe('Counter name'),
        delay_ms: z.number().int().min(0).max(60_000).default(0).describe('Wait this long before counting'),
      }),
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    async ({ key, delay_ms }) => {
      if (delay_ms > 0) await sleep(delay_ms);
      const value = (state.counters.get(key) ?? 0) + 1;
      state.counters.set(key, value);
      return { content: [text(String(value))], structuredContent: { key, value } };
    },
  );
  server.registerTool(
    'read_counter',
    {
      description: 'Returns the value of a named counter without changing it.',
      inputSchema: z.object({ key: z.string().default('default').describe('Counter name') }),
      annotations: { readOnlyHint: true },
    },
    async ({ key }) => {
      const value = state.counters.get(key) ?? 0;
      return { content: [text(String(value))], structuredContent: { key, value } };
    },
  );
}
