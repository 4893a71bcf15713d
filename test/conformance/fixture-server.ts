/**
 * The conformance fixture: a plain MCP server built with the official SDK (no
 * Idem) that implements every tool, resource and prompt the MCP conformance
 * suite's server scenarios call, plus a few tools with effects (counters) for
 * the gateway's dedup tests. The gateway is proven invisible by running the
 * same suite against this server directly and through the gateway.
 *
 *   node --import tsx test/conformance/fixture-server.ts --stdio
 *   node --import tsx test/conformance/fixture-server.ts --port 0   # prints "listening <url>"
 *
 * Over HTTP it serves Streamable HTTP at http://127.0.0.1:<port>/mcp with
 * sessions, an in-memory event store (priming events, resumability with
 * Last-Event-ID) and Host/Origin validation against DNS rebinding.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  type LoggingLevel,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { RED_PIXEL_PNG, SILENT_WAV } from './content.js';
import { MemoryEventStore } from './event-store.js';

const LOG_LEVELS: LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** State shared by every session of one fixture process: what the effect tools did. */
export interface FixtureState {
  counters: Map<string, number>;
}

export function newFixtureState(): FixtureState {
  return { counters: new Map() };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const text = (value: string) => ({ type: 'text' as const, text: value });

/**
 * One McpServer (the SDK binds a server to one transport, so HTTP makes one per
 * session). `state` is shared across sessions.
 */
export function createFixtureServer(state: FixtureState = newFixtureState()): McpServer {
  const server = new McpServer(
    { name: 'idem-conformance-fixture', version: '1.0.0' },
    {
      capabilities: { logging: {}, resources: { subscribe: true, listChanged: true }, completions: {} },
      instructions: 'Fixture for the MCP conformance suite and the Idem gateway tests.',
    },
  );

  // logging/setLevel is answered here (not by the SDK's default handler) so the
  // level can filter what the tools below send on their request's stream.
  let logLevel: LoggingLevel = 'info';
  server.server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    logLevel = request.params.level;
    return {};
  });
  const logs = (level: LoggingLevel) => LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(logLevel);

  registerContentTools(server);
  registerInteractiveTools(server, logs);
  registerSchemaTools(server);
  registerEffectTools(server, state);
  registerResources(server);
  registerPrompts(server);
  return server;
}

function registerContentTools(server: McpServer): void {
  server.registerTool('test_simple_text', { description: 'Returns a simple text response.' }, async () => ({
    content: [text('This is a simple text response for testing.')],
  }));
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
}

function registerInteractiveTools(server: McpServer, logs: (level: LoggingLevel) => boolean): void {
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Sends three info log notifications while it runs.' },
    async (extra) => {
      const messages = ['Tool execution started', 'Tool processing data', 'Tool execution completed'];
      for (const [i, data] of messages.entries()) {
        if (i > 0) await sleep(50);
        if (logs('info')) {
          await extra.sendNotification({
            method: 'notifications/message',
            params: { level: 'info', logger: 'fixture', data },
          });
        }
      }
      return { content: [text('Tool with logging executed successfully')] };
    },
  );

  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50 and 100 of 100 when given a progress token.' },
    async (extra) => {
      const progressToken = extra._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(50);
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100, message: `step ${i + 1} of 3` },
          });
        }
      }
      return { content: [text('Tool with progress executed successfully')] };
    },
  );

  server.registerTool(
    'test_sampling',
    {
      description: 'Asks the client to sample an LLM completion for the prompt.',
      inputSchema: { prompt: z.string().describe('The prompt to send to the LLM') },
    },
    async ({ prompt }, extra) => {
      const result = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: text(prompt) }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      const answer = result.content.type === 'text' ? result.content.text : JSON.stringify(result.content);
      return { content: [text(`LLM response: ${answer}`)] };
    },
  );

  server.registerTool(
    'test_elicitation',
    {
      description: 'Asks the client for a username and an email address.',
      inputSchema: { message: z.string().describe('The message to show the user') },
    },
    async ({ message }, extra) => {
      const result = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
            message,
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" },
              },
              required: ['username', 'email'],
            },
          },
        },
        ElicitResultSchema,
      );
      return {
        content: [
          text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`),
        ],
      };
    },
  );

  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Elicitation whose schema has a default for every primitive type (SEP-1034).' },
    async (extra) => {
      const result = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
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
          },
        },
        ElicitResultSchema,
      );
      return { content: [text(elicitationSummary(result))] };
    },
  );

  server.registerTool(
    'test_elicitation_sep1330_enums',
    { description: 'Elicitation with all five enum schema variants (SEP-1330).' },
    async (extra) => {
      const result = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
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
          },
        },
        ElicitResultSchema,
      );
      return { content: [text(elicitationSummary(result))] };
    },
  );

  server.registerTool(
    'test_reconnection',
    {
      description:
        'Closes its SSE stream mid-call, then answers: the client must resume with Last-Event-ID (SEP-1699).',
    },
    async (extra) => {
      await sleep(100);
      extra.closeSSEStream?.();
      await sleep(200);
      return { content: [text('Reconnection test completed')] };
    },
  );
}

function elicitationSummary(result: { action: string; content?: unknown }): string {
  return `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
}

function registerSchemaTools(server: McpServer): void {
  const address = z.object({ street: z.string().optional(), city: z.string().optional() });
  // The listing must keep $schema, $defs and additionalProperties (SEP-1613):
  // the root's metadata sets the first two, a strict object the third, and the
  // address property is a bare $ref whose value is still validated here.
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: z
        .strictObject({
          name: z.string().optional(),
          address: z
            .unknown()
            .superRefine((value, ctx) => {
              if (!address.safeParse(value).success)
                ctx.addIssue({ code: 'custom', message: 'Invalid address' });
            })
            .optional()
            .meta({ $ref: '#/$defs/address' }),
        })
        .meta({
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          $defs: {
            address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } },
          },
        }),
    },
    async (args) => ({ content: [text(`Received: ${JSON.stringify(args)}`)] }),
  );
}

function registerEffectTools(server: McpServer, state: FixtureState): void {
  server.registerTool(
    'increment_counter',
    {
      description: 'Adds one to a named counter and returns its new value (an effect, for dedup tests).',
      inputSchema: {
        key: z.string().default('default').describe('Counter name'),
        delay_ms: z.number().int().min(0).max(60_000).default(0).describe('Wait this long before counting'),
      },
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
      inputSchema: { key: z.string().default('default').describe('Counter name') },
      annotations: { readOnlyHint: true },
    },
    async ({ key }) => {
      const value = state.counters.get(key) ?? 0;
      return { content: [text(String(value))], structuredContent: { key, value } };
    },
  );
}

function registerResources(server: McpServer): void {
  server.registerResource(
    'static-text',
    'test://static-text',
    { description: 'A static text resource', mimeType: 'text/plain' },
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

  const subscriptions = new Set<string>();
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });
  server.registerTool(
    'touch_resource',
    {
      description: 'Sends notifications/resources/updated for a subscribed resource (for forwarding tests).',
      inputSchema: { uri: z.string().default('test://watched-resource') },
    },
    async ({ uri }, extra) => {
      const subscribed = subscriptions.has(uri);
      if (subscribed)
        await extra.sendNotification({ method: 'notifications/resources/updated', params: { uri } });
      return { content: [text(subscribed ? `notified ${uri}` : `not subscribed: ${uri}`)] };
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
      argsSchema: {
        arg1: completable(z.string().describe('First test argument'), (value) =>
          ['paris', 'park', 'party', 'test', 'testing'].filter((word) => word.startsWith(value)),
        ),
        arg2: z.string().describe('Second test argument'),
      },
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      description: 'A prompt that embeds a resource',
      argsSchema: { resourceUri: z.string().describe('URI of the resource to embed') },
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
}

export interface ServedFixture {
  url: string;
  state: FixtureState;
  close(): Promise<void>;
}

const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Host and Origin must name the loopback interface: a DNS-rebound page gets 403. */
function isLoopbackRequest(req: IncomingMessage): boolean {
  const hostname = (value: string) => {
    try {
      return new URL(value).hostname.toLowerCase();
    } catch {
      return undefined;
    }
  };
  const host = req.headers.host;
  if (!host || !LOOPBACK_HOSTNAMES.has(hostname(`http://${host}`) ?? '')) return false;
  const origin = req.headers.origin;
  return origin === undefined || LOOPBACK_HOSTNAMES.has(hostname(origin) ?? '');
}

function sendJsonError(res: ServerResponse, status: number, code: number, message: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Serves the fixture over Streamable HTTP at http://127.0.0.1:<port>/mcp (port 0: any free port). */
export async function serveFixtureHttp(
  options: { port?: number; state?: FixtureState } = {},
): Promise<ServedFixture> {
  const state = options.state ?? newFixtureState();
  const sessions = new Map<string, StreamableHTTPServerTransport>();

  const openSession = async (): Promise<StreamableHTTPServerTransport> => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new MemoryEventStore(),
      retryInterval: 500,
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await createFixtureServer(state).connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    if (!isLoopbackRequest(req)) {
      sendJsonError(res, 403, -32000, 'Forbidden: Host and Origin must be a loopback name');
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const transport = sessions.get(sessionId);
      if (!transport) sendJsonError(res, 404, -32001, 'Session not found');
      else await transport.handleRequest(req, res);
      return;
    }
    if (req.method !== 'POST') {
      sendJsonError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    // A POST without a session: the transport accepts only an initialize here;
    // if it refused the request, no session began and the transport goes.
    const transport = await openSession();
    await transport.handleRequest(req, res);
    if (!transport.sessionId) await transport.close();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJsonError(res, 500, -32603, String(error));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    close: async () => {
      for (const transport of [...sessions.values()]) await transport.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--stdio')) {
    await createFixtureServer().connect(new StdioServerTransport());
    return;
  }
  const portIndex = argv.indexOf('--port');
  const port = portIndex >= 0 ? Number(argv[portIndex + 1]) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write('usage: fixture-server.ts --stdio | --port <n> (0: any free port)\n');
    process.exit(2);
  }
  const served = await serveFixtureHttp({ port });
  process.stdout.write(`listening ${served.url}\n`);
  const stop = () => {
    served.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
