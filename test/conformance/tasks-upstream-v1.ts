/**
 * The plain upstream of tasks-upstream.ts, written the way most published servers are: on the v1
 * SDK (`@modelcontextprotocol/sdk` 1.x) and its low-level `Server`, 2025-era only. The same tools
 * the conformance suite's tasks scenarios name, doing the same, but the 2025 way: a tool that
 * needs input pushes `elicitation/create` while the call runs (`server.elicitInput`), and one that
 * fails at the protocol level answers a JSON-RPC error (`McpError`; a plain throw is -32603). It
 * declares no tasks (the SDK refuses a request that asks for one: "Server does not support task
 * creation"), lists no `execution.taskSupport`: whatever task a client sees in front of it is the
 * gateway's own.
 *
 *   node --import tsx test/conformance/tasks-upstream-v1.ts --stdio [--dir <dir>]
 *   node --import tsx test/conformance/tasks-upstream-v1.ts --port 0 [--dir <dir>]   # prints "listening <url>"
 *
 * With `--dir`, the effect tools the tasks tests race on (charges.ts says what they record):
 * - `charge {key, release_file?}`: charges, then answers `charged <key>` once released;
 * - `charge_then_fail {key}`: charges, then fails with a plain error (JSON-RPC -32603): the
 *   upstream acted, then answered an error;
 * - `ask_then_charge {key, release_file?}`: asks `confirm` first (pushed elicitation); accepted, it
 *   charges and answers `charged <key>` once released, else `not charged <key> (<action>)`;
 * - `echo_request {}` (read-only): what its request carried besides the arguments (`_meta`).
 * A cancel of an effect tool's call is recorded and changes nothing: it answers all the same, as
 * a server whose effect cannot be called back (the SDK itself would drop that answer).
 *
 * Over HTTP it keeps a session per client (a pushed request is answered on a later POST of the
 * same session); the elicitation rides the call's own response stream (`relatedRequestId`).
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { keyOf, recordAsked, recordCancel, recordCharge, released } from './charges.js';

type Answer = { action: 'accept' | 'decline' | 'cancel'; content: Record<string, unknown> };

/** What a tool's run is given: its cancel, and a way to ask its client (a pushed elicitation). */
interface RunContext {
  signal: AbortSignal;
  ask(message: string, properties: Record<string, unknown>, required?: string[]): Promise<Answer>;
  meta: Record<string, unknown> | undefined;
  dir: string | undefined;
}

interface FixtureTool<Args extends z.ZodType> {
  description: string;
  args: Args;
  annotations?: Tool['annotations'];
  /** An effect tool: answers even when its call is cancelled (only with --dir). */
  effect?: true;
  run(args: z.output<Args>, ctx: RunContext): Promise<CallToolResult>;
}

const tool = <Args extends z.ZodType>(definition: FixtureTool<Args>) => definition;
const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

/** How long a pushed question waits for its answer (the SDK's own default is a minute). */
const ASK_TIMEOUT_MS = 600_000;
const RELEASE_POLL_MS = 20;

/** Resolves after `ms`, or rejects as soon as the call is cancelled. */
function waitFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener('abort', abort, { once: true });
  });
}

const confirmForm = { confirm: { type: 'boolean' } };
const nameForm = { name: { type: 'string' }, confirm: { type: 'boolean' } };

/** The tools the tasks scenarios name: what tasks-upstream.ts does, the v1 way. */
const SCENARIO_TOOLS = {
  greet: tool({
    description: 'Sync only: returns "Hello, {name}!".',
    args: z.object({ name: z.string() }),
    annotations: { readOnlyHint: true },
    run: async ({ name }) => text(`Hello, ${name}!`),
  }),
  slow_compute: tool({
    description:
      'Works `seconds` seconds (0: at once), or until `release_file` exists, then returns a result; stops when the call is cancelled.',
    args: z.object({
      seconds: z.number().min(0).max(3600).default(0),
      label: z.string().default('compute'),
      release_file: z.string().optional(),
    }),
    run: async ({ seconds, label, release_file }, { signal }) => {
      const started = Date.now();
      if (release_file) while (!existsSync(release_file)) await waitFor(RELEASE_POLL_MS, signal);
      else await waitFor(seconds * 1000, signal);
      return text(`Computed ${label} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
  }),
  failing_job: tool({
    description: 'Always fails as a tool: an isError result after `seconds` (default 1).',
    args: z.object({ seconds: z.number().min(0).max(3600).default(1) }),
    run: async ({ seconds }, { signal }) => {
      await waitFor(seconds * 1000, signal);
      return { ...text('failing_job: the job ran and reported a failure'), isError: true };
    },
  }),
  protocol_error_job: tool({
    description: 'Always fails at the protocol level: a JSON-RPC internal error (-32603), not a result.',
    args: z.object({}),
    run: async () => {
      throw new McpError(ErrorCode.InternalError, 'protocol_error_job: internal failure');
    },
  }),
  confirm_delete: tool({
    description:
      'Asks one confirmation (a pushed elicitation) before it deletes; answered, it completes either way.',
    args: z.object({ filename: z.string() }),
    annotations: { destructiveHint: true },
    run: async ({ filename }, { ask }) => {
      const answer = await ask(`Delete ${filename}?`, confirmForm);
      const confirmed = answer.action === 'accept' && answer.content.confirm !== false;
      return text(confirmed ? `Deleted ${filename}` : `Kept ${filename} (${answer.action})`);
    },
  }),
  multi_input: tool({
    description: 'Asks two inputs at once (two pushed elicitations) and completes once both are answered.',
    args: z.object({}),
    run: async (_args, { ask }) => {
      const [first, second] = await Promise.all([
        ask('The first input?', nameForm),
        ask('The second input?', nameForm),
      ]);
      const named = (a: Answer) => String(a.content.name ?? a.action);
      return text(`Inputs received: ${named(first)}, ${named(second)}`);
    },
  }),
  test_tool_with_task: tool({
    description:
      'Asks a name (a pushed elicitation) first; answered, it completes with a text that names it.',
    args: z.object({}),
    run: async (_args, { ask }) => {
      const answer = await ask('What is your name?', { name: { type: 'string' } }, ['name']);
      const name = answer.action === 'accept' ? String(answer.content.name ?? 'friend') : 'friend';
      return text(`Hello, ${name}! The work that began with your answer is done.`);
    },
  }),
};

const needsDir = (dir: string | undefined): string => {
  if (!dir) throw new McpError(ErrorCode.InvalidRequest, 'started without --dir');
  return dir;
};

/** The effect tools (charges.ts), with --dir. */
const EFFECT_TOOLS = {
  charge: tool({
    description: 'Charges `key`, then answers once `release_file` exists (at once without one).',
    args: z.object({ key: z.string(), release_file: z.string().optional() }),
    effect: true,
    run: async ({ key, release_file }, ctx) => {
      const dir = needsDir(ctx.dir);
      recordCharge(dir, key);
      await released(dir, release_file);
      return text(`charged ${key}`);
    },
  }),
  charge_then_fail: tool({
    description: 'Charges `key`, then fails with a plain error: the upstream acted, then answered an error.',
    args: z.object({ key: z.string() }),
    effect: true,
    run: async ({ key }, ctx) => {
      recordCharge(needsDir(ctx.dir), key);
      throw new Error(`charged ${key}, then the receipt could not be written`);
    },
  }),
  ask_then_charge: tool({
    description: 'Asks `confirm` first; accepted, charges `key` and answers once `release_file` exists.',
    args: z.object({ key: z.string(), release_file: z.string().optional() }),
    effect: true,
    run: async ({ key, release_file }, ctx) => {
      const dir = needsDir(ctx.dir);
      recordAsked(dir, key);
      const answer = await ctx.ask(`Charge ${key}?`, confirmForm);
      if (answer.action !== 'accept' || answer.content.confirm === false)
        return text(`not charged ${key} (${answer.action})`);
      recordCharge(dir, key);
      await released(dir, release_file);
      return text(`charged ${key}`);
    },
  }),
  echo_request: tool({
    description: 'Answers with what its request carried besides the arguments (its _meta).',
    args: z.object({}),
    annotations: { readOnlyHint: true },
    run: async (_args, { meta }) => text(JSON.stringify({ meta: meta ?? null })),
  }),
};

type Tools = Record<string, FixtureTool<z.ZodType>>;

/** One server instance: stdio makes one, HTTP one per session. */
export function createTasksUpstreamV1(dir?: string): Server {
  const tools: Tools = { ...SCENARIO_TOOLS, ...(dir ? EFFECT_TOOLS : {}) };
  const server = new Server(
    { name: 'idem-tasks-upstream-v1', version: '1.0.0' },
    {
      capabilities: { tools: {} },
      instructions:
        'A plain 2025-era upstream (SDK v1) with the tools the tasks scenarios name, and no tasks.',
    },
  );
  /** Calls of effect tools in flight, by request id: a cancel of one is recorded and changes nothing. */
  const effects = new Map<string | number, string>();
  // Any other call is cancelled as the SDK does it (its handler's signal aborted, its answer
  // dropped): its own handler, which this one replaces, is private, hence the cast.
  const sdkCancel = (server as unknown as { _oncancel(n: unknown): Promise<void> })._oncancel.bind(server);
  server.setNotificationHandler(CancelledNotificationSchema, async (notification) => {
    // A cancel read with its call (one chunk) comes before the call's handler has begun: after this
    // turn it has, and says whether it is an effect tool's.
    await new Promise((resolve) => setImmediate(resolve));
    const { requestId } = notification.params;
    const key = requestId === undefined ? undefined : effects.get(requestId);
    if (key !== undefined && dir) return recordCancel(dir, key);
    await sdkCancel(notification);
  });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: Object.entries(tools).map(([name, definition]) => ({
      name,
      description: definition.description,
      inputSchema: z.toJSONSchema(definition.args, { io: 'input' }) as Tool['inputSchema'],
      ...(definition.annotations ? { annotations: definition.annotations } : {}),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const definition = Object.hasOwn(tools, name) ? tools[name] : undefined;
    if (!definition) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const parsed = definition.args.safeParse(args ?? {});
    if (!parsed.success)
      throw new McpError(
        ErrorCode.InvalidParams,
        `Invalid arguments for ${name}: ${z.prettifyError(parsed.error)}`,
      );
    if (definition.effect) effects.set(extra.requestId, keyOf(parsed.data));
    const ask: RunContext['ask'] = async (message, properties, required = []) =>
      (await server.elicitInput(
        { mode: 'form', message, requestedSchema: { type: 'object', properties, required } } as Parameters<
          Server['elicitInput']
        >[0],
        { relatedRequestId: extra.requestId, timeout: ASK_TIMEOUT_MS },
      )) as Answer;
    try {
      return await definition.run(parsed.data, {
        signal: extra.signal,
        ask,
        meta: request.params._meta,
        dir,
      });
    } finally {
      effects.delete(extra.requestId);
    }
  });
  return server;
}

async function serveHttp(port: number, dir: string | undefined): Promise<void> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers['mcp-session-id'];
    const transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!transport) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body =
        chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
      if (!isInitializeRequest(body)) {
        res.writeHead(404).end();
        return;
      }
      const opened = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, opened);
        },
      });
      opened.onclose = () => {
        if (opened.sessionId) sessions.delete(opened.sessionId);
      };
      await createTasksUpstreamV1(dir).connect(opened);
      await opened.handleRequest(req, res, body);
      return;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  process.stdout.write(`listening http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp\n`);
  const stop = () => http.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { stdio: { type: 'boolean' }, port: { type: 'string' }, dir: { type: 'string' } },
  });
  if (values.stdio) {
    await createTasksUpstreamV1(values.dir).connect(new StdioServerTransport());
    return;
  }
  const port = Number(values.port);
  if (values.port === undefined || !Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(
      'usage: tasks-upstream-v1.ts --stdio | --port <n> (0: any free port) [--dir <dir>]\n',
    );
    process.exit(2);
  }
  await serveHttp(port, values.dir);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
