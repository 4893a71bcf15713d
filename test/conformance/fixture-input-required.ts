/**
 * The fixture's tools that ask the client for input (SEP-2322 multi-round
 * trips, written once with `inputRequired`), the tools the 2026-07-28
 * `server-stateless` scenario probes with, and the `Mcp-Param-*` header tool
 * (SEP-2243). The helpers that read an answer are shared with the prompt
 * that asks for input (fixture-resources-prompts.ts).
 */
import {
  acceptedContent,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  fromJsonSchema,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { done, text } from './content.js';
import type { FixtureState, MrtrState } from './fixture-state.js';

const NO_ARGS = z.object({});
export const askText = (message: string, field = 'name') =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
  });
const askConfirm = () =>
  inputRequired.elicit({
    message: 'Please confirm',
    requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
  });

/** Text of field `field` in an accepted elicitation answer, whatever its type. */
export function answered(ctx: ServerContext, key: string, field: string): string | undefined {
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
export function registerInputRequiredTools(server: McpServer, state: FixtureState): void {
  const { mint } = state.stateCodec;
  // A 2026-07-28 request says what its client can do in its envelope; a 2025 session said it at initialize.
  const clientCapabilities = (ctx: ServerContext): ClientCapabilities =>
    (ctx.mcpReq.envelope as Record<string, ClientCapabilities> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] ??
    server.server.getClientCapabilities() ??
    {};
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
export function registerDiagnosticTools(server: McpServer, state: FixtureState): void {
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
export function registerHeaderTool(server: McpServer): void {
  server.registerTool(
    'test_param_header',
    {
      description: 'Echoes its region, an argument the client also sends as the Mcp-Param-Region header.',
      inputSchema: fromJsonSchema<{ region: string }>(PARAM_HEADER_SCHEMA),
    },
    async ({ region }) => done(`region: ${region}`),
  );
}
