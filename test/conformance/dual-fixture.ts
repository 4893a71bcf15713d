/**
 * What the dual-revision fixture offers, built on the official v2 SDK
 * (`@modelcontextprotocol/server` 2.x): every tool, resource and prompt that
 * the conformance suite's server scenarios call under `--requirements
 * 2025-11-25` and `--requirements 2026-07-28`, plus the effect tools
 * (counters) the gateway tests count with.
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
import {
  acceptedContent,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  completable,
  createRequestStateCodec,
  fromJsonSchema,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  McpServer,
  ResourceTemplate,
  type ServerContext,
  type ServerNotifier,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { RED_PIXEL_PNG, SILENT_WAV } from './media.js';

/** State shared by every instance of one fixture process: what the effect tools did. */
export interface DualFixtureState {
  counters: Map<string, number>;
  /** Resource URIs a 2025 session subscribed to (per process: the suite uses one session). */
  subscriptions: Set<string>;
  /**
   * Seals requestState. One key per process: 2026-07-28 builds a fresh server
   * per request, so every instance must verify what another minted.
   */
  stateCodec: ReturnType<typeof createRequestStateCodec<MrtrState>>;
  /** Publishes list changes to open subscriptions/listen streams (HTTP only; set once the handler exists). */
  notifier?: ServerNotifier;
}

type MrtrState = { kind: string; round?: number; name?: string };

export function newDualFixtureState(): DualFixtureState {
  return {
    counters: new Map(),
    subscriptions: new Set(),
    stateCodec: createRequestStateCodec<MrtrState>({
      key: crypto.getRandomValues(new Uint8Array(32)),
      ttlSeconds: 600,
    }),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const text = (value: string) => ({ type: 'text' as const, text: value });
const done = (value: string): CallToolResult => ({ content: [text(value)] });
const NO_ARGS = z.object({});
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
const askText = (message: string, field = 'name') =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
  });
const askConfirm = () =>
  inputRequired.elicit({
    message: 'Please confirm',
    requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
  });

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
  const clientCapabilities = (ctx: ServerContext): ClientCapabilities =>
    (ctx.mcpReq.envelope as Record<string, ClientCapabilities> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] ??
    server.server.getClientCapabilities() ??
    {};

  registerContentTools(server);
  registerInteractiveTools(server);
  registerInputRequiredTools(server, state, clientCapabilities);
  registerDiagnosticTools(server, state);
  registerHeaderTool(server);
  registerEffectTools(server, state);
  registerResources(server, state);
  registerPrompts(server);
  return server;
}

function registerContentTools(server: McpServer): void {
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
function registerInteractiveTools(server: McpServer): void {
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

/** Text of field `field` in an accepted elicitation answer, whatever its type. */
function answered(ctx: ServerContext, key: string, field: string): string | undefined {
  const content = acceptedContent<Record<string, unknown>>(ctx.mcpReq.inputResponses, key);
  const value = content?.[field];
  return value === undefined ? undefined : String(value);
}

function sampledText(ctx: ServerContext, key: string): string | undefined {
  const view = inputResponse(ctx.mcpReq.inputResponses, key);
  if (view.kind !== 'sampling') return undefined;
  const content = Array.isArray(view.result.content) ? view.result.content[0] : view.result.content;
  return content?.type === 'text' ? content.text : undefined;
}

function rootCount(ctx: ServerContext, key: string): number | undefined {
  const view = inputResponse(ctx.mcpReq.inputResponses, key);
  return view.kind === 'roots' ? view.roots.length : undefined;
}

type ToolOutcome = Promise<CallToolResult | InputRequiredResult>;

/**
 * SEP-2322 multi-round-trip tools, written once with `inputRequired`: the SDK
 * returns `input_required` to a 2026-07-28 client and pushes the embedded
 * requests to a 2025 one. requestState is sealed by the state codec, so a
 * tampered state never reaches a handler (-32602).
 */
function registerInputRequiredTools(
  server: McpServer,
  state: DualFixtureState,
  clientCapabilities: (ctx: ServerContext) => ClientCapabilities,
): void {
  const { mint } = state.stateCodec;
  server.registerTool(
    'test_input_required_result_elicitation',
    { description: 'MRTR: asks for a name by elicitation', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const name = answered(ctx, 'user_name', 'name');
      if (name === undefined)
        return inputRequired({ inputRequests: { user_name: askText('What is your name?') } });
      return done(`Hello, ${name}!`);
    },
  );
  server.registerTool(
    'test_input_required_result_sampling',
    { description: 'MRTR: asks the client to sample', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const sample = sampledText(ctx, 'sample_request');
      if (sample === undefined)
        return inputRequired({
          inputRequests: {
            sample_request: inputRequired.createMessage({
              messages: [{ role: 'user', content: text('What is the capital of France?') }],
              maxTokens: 100,
            }),
          },
        });
      return done(`Sampling result: ${sample}`);
    },
  );
  server.registerTool(
    'test_input_required_result_list_roots',
    { description: 'MRTR: asks for the client roots', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const roots = rootCount(ctx, 'roots_request');
      if (roots === undefined)
        return inputRequired({ inputRequests: { roots_request: inputRequired.listRoots() } });
      return done(`Found ${roots} root(s)`);
    },
  );
  server.registerTool(
    'test_input_required_result_request_state',
    { description: 'MRTR: asks for a confirmation and carries requestState', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const confirmed = acceptedContent<{ ok?: boolean }>(ctx.mcpReq.inputResponses, 'confirm');
      if (ctx.mcpReq.requestState<MrtrState>()?.kind === 'request-state' && confirmed?.ok === true)
        return done('state-ok: requestState validated');
      return inputRequired({
        inputRequests: { confirm: askConfirm() },
        requestState: await mint({ kind: 'request-state' }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_multiple_inputs',
    { description: 'MRTR: asks for a name, a sampled greeting and the roots at once', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const name = answered(ctx, 'user_name', 'name');
      const greeting = sampledText(ctx, 'greeting');
      const roots = rootCount(ctx, 'client_roots');
      if (
        ctx.mcpReq.requestState<MrtrState>()?.kind === 'multiple-inputs' &&
        name !== undefined &&
        greeting !== undefined &&
        roots !== undefined
      )
        return done(`Name: ${name}; Greeting: ${greeting}; Roots: ${roots}`);
      return inputRequired({
        inputRequests: {
          user_name: askText('What is your name?'),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: text('Generate a greeting') }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: await mint({ kind: 'multiple-inputs' }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_multi_round',
    { description: 'MRTR: two rounds in sequence (name, then colour)', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const previous = ctx.mcpReq.requestState<MrtrState>();
      const name = answered(ctx, 'step1', 'name');
      if (previous?.round === 1 && name !== undefined)
        return inputRequired({
          inputRequests: { step2: askText('Step 2: What is your favorite color?', 'color') },
          requestState: await mint({ kind: 'multi-round', round: 2, name }),
        });
      const color = answered(ctx, 'step2', 'color');
      if (previous?.round === 2 && color !== undefined)
        return done(`Multi-round complete for ${previous.name ?? 'friend'} who likes ${color}`);
      return inputRequired({
        inputRequests: { step1: askText('Step 1: What is your name?') },
        requestState: await mint({ kind: 'multi-round', round: 1 }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_tampered_state',
    { description: 'MRTR: sealed requestState; a tampered one is refused', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      if (ctx.mcpReq.requestState<MrtrState>()?.kind === 'tamper-test' && ctx.mcpReq.inputResponses?.confirm)
        return done('integrity-ok: state verified');
      return inputRequired({
        inputRequests: { confirm: askConfirm() },
        requestState: await mint({ kind: 'tamper-test' }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_capabilities',
    { description: 'MRTR: asks only for what the client declared it can do', inputSchema: NO_ARGS },
    async (_args, ctx): ToolOutcome => {
      const received = Object.keys(ctx.mcpReq.inputResponses ?? {});
      if (received.length > 0) return done(`capabilities-ok: received ${received.join(',')}`);
      const caps = clientCapabilities(ctx);
      const inputRequests = {
        ...(caps.elicitation && {
          elicit_input: inputRequired.elicit({
            message: 'Elicitation input',
            requestedSchema: {
              type: 'object',
              properties: { value: { type: 'string' } },
              required: ['value'],
            },
          }),
        }),
        ...(caps.sampling && {
          sample_input: inputRequired.createMessage({
            messages: [{ role: 'user', content: text('Sample request') }],
            maxTokens: 50,
          }),
        }),
      };
      if (Object.keys(inputRequests).length === 0) return done('No supported capabilities declared');
      return inputRequired({ inputRequests, requestState: await mint({ kind: 'capabilities-test' }) });
    },
  );
}

/** Tools the 2026-07-28 `server-stateless` scenario probes with. */
function registerDiagnosticTools(server: McpServer, state: DualFixtureState): void {
  // A thrown error would become an isError result; an embedded sampling request
  // makes the SDK check the client's declared capabilities (-32021, HTTP 400).
  server.registerTool(
    'test_missing_capability',
    {
      description: 'Needs the sampling capability: -32021 when the client did not declare it.',
      inputSchema: NO_ARGS,
    },
    async (_args, ctx): ToolOutcome => {
      if (sampledText(ctx, 'sample') !== undefined) return done('Success');
      return inputRequired({
        inputRequests: {
          sample: inputRequired.createMessage({
            messages: [{ role: 'user', content: text('Say anything') }],
            maxTokens: 10,
          }),
        },
      });
    },
  );
  server.registerTool(
    'test_streaming_elicitation',
    { description: 'Sends a progress notification on the request stream, then answers.' },
    async (ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      if (progressToken !== undefined)
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, progress: 50, total: 100 },
        });
      return done('Streaming complete');
    },
  );
  server.registerTool(
    'test_logging_tool',
    { description: 'Logs once at info (sent only if the request asked for a log level).' },
    async (ctx) => {
      await ctx.mcpReq.log('info', 'Diagnostic trace logging activated');
      return done('Logging evaluated');
    },
  );
  server.registerTool(
    'test_trigger_tool_change',
    { description: 'Announces a tool list change to open subscriptions.' },
    async (ctx) => {
      state.notifier?.toolsChanged();
      if (!state.notifier) await ctx.mcpReq.notify({ method: 'notifications/tools/list_changed' });
      return done('Mutation triggered');
    },
  );
  server.registerTool(
    'test_trigger_prompt_change',
    { description: 'Announces a prompt list change to open subscriptions.' },
    async (ctx) => {
      state.notifier?.promptsChanged();
      if (!state.notifier) await ctx.mcpReq.notify({ method: 'notifications/prompts/list_changed' });
      return done('Mutation triggered');
    },
  );
}

// Declared apart: the SDK's JSON Schema type does not know the x-mcp-header annotation.
const PARAM_HEADER_SCHEMA = {
  type: 'object' as const,
  properties: { region: { type: 'string', 'x-mcp-header': 'Region' } },
  required: ['region'],
};

/** SEP-2243: an argument mirrored in an `Mcp-Param-Region` header, which createMcpHandler checks against the body. */
function registerHeaderTool(server: McpServer): void {
  server.registerTool(
    'test_param_header',
    {
      description: 'Echoes its region, an argument the client also sends as the Mcp-Param-Region header.',
      inputSchema: fromJsonSchema<{ region: string }>(PARAM_HEADER_SCHEMA),
    },
    async ({ region }) => done(`region: ${region}`),
  );
}

function registerEffectTools(server: McpServer, state: DualFixtureState): void {
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

function registerResources(server: McpServer, state: DualFixtureState): void {
  server.registerResource(
    'static-text',
    'test://static-text',
    {
      description: 'A static text resource',
      mimeType: 'text/plain',
      cacheHint: { ttlMs: 300_000, cacheScope: 'public' },
    },
    async (uri) => ({
      contents: [
        { uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ],
    }),
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    { description: 'A static binary resource (a PNG image)', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: RED_PIXEL_PNG }] }),
  );
  server.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', {
      list: undefined,
      complete: { id: (value) => ['123', '456', '789'].filter((id) => id.startsWith(value)) },
    }),
    { description: 'A resource template whose {id} is substituted', mimeType: 'application/json' },
    async (uri, { id }) => {
      const value = Array.isArray(id) ? id.join(',') : String(id);
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: 'application/json',
            text: JSON.stringify({ id: value, templateTest: true, data: `Data for ID: ${value}` }),
          },
        ],
      };
    },
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { description: 'A resource that can be subscribed to', mimeType: 'text/plain' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }],
    }),
  );

  server.server.setRequestHandler('resources/subscribe', async (request) => {
    state.subscriptions.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    state.subscriptions.delete(request.params.uri);
    return {};
  });
  server.registerTool(
    'touch_resource',
    {
      description: 'Sends notifications/resources/updated for a subscribed resource (for forwarding tests).',
      inputSchema: z.object({ uri: z.string().default('test://watched-resource') }),
    },
    async ({ uri }, ctx) => {
      const subscribed = state.subscriptions.has(uri);
      if (subscribed) await ctx.mcpReq.notify({ method: 'notifications/resources/updated', params: { uri } });
      state.notifier?.resourceUpdated(uri);
      return done(subscribed ? `notified ${uri}` : `not subscribed: ${uri}`);
    },
  );
}

function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'test_simple_prompt',
    { description: 'A simple prompt without arguments' },
    async () => ({
      messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two required arguments',
      argsSchema: z.object({
        arg1: completable(z.string().describe('First test argument'), (value) =>
          ['paris', 'park', 'party', 'test', 'testing'].filter((word) => word.startsWith(value)),
        ),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      description: 'A prompt that embeds a resource',
      argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
    },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: text('Please process the embedded resource above.') },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_image',
    { description: 'A prompt with image content' },
    async () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' } },
        { role: 'user', content: text('Please analyze the image above.') },
      ],
    }),
  );
  server.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'MRTR: a prompt that asks for context by elicitation' },
    async (ctx) => {
      const context = answered(ctx, 'user_context', 'context');
      if (context === undefined)
        return inputRequired({
          inputRequests: { user_context: askText('What context should the prompt use?', 'context') },
        });
      return { messages: [{ role: 'user', content: text(`Prompt with context: ${context}`) }] };
    },
  );
}
