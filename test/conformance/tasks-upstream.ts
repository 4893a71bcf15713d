/**
 * A plain upstream for the conformance suite's tasks scenarios (SEP-2663,
 * `tasks-*` in conformance-next): exactly the tools those scenarios name, each
 * doing what the scenarios expect of the tool itself — and no tasks at all. It
 * declares no tasks capability (neither the 2025-11-25 `capabilities.tasks`
 * nor the `io.modelcontextprotocol/tasks` extension), lists no
 * `execution.taskSupport`, and always answers `tools/call` with a result, an
 * `input_required` round or a JSON-RPC error. Whatever task a client sees in
 * front of it is the gateway's own.
 *
 *   node --import tsx test/conformance/tasks-upstream.ts --stdio
 *   node --import tsx test/conformance/tasks-upstream.ts --port 0   # prints "listening <url>"
 *
 * Built on the v2 SDK's low-level `Server`, not `McpServer`: `McpServer` turns
 * every error a tool throws into an `isError` result, and `protocol_error_job`
 * must answer with a JSON-RPC error. One handler serves both eras: a tool that
 * needs input returns `inputRequired(...)`, which a 2026-07-28 client gets as
 * an `input_required` result and a 2025-era session as pushed elicitation
 * requests (the SDK's legacy shim, which sends the requests of one round at once).
 *
 * How long a tool works is its argument, or a condition a test sets, never a
 * timer the fixture guesses: `slow_compute` works `seconds` (the scenarios' own
 * argument) or until `release_file` exists, and stops when its call is
 * cancelled. `failing_job` reports its failure after `seconds` (default 1, as
 * the scenarios describe it).
 *
 * With `--dir <dir>`, the effect tools the tasks tests race on, as tasks-upstream-v1.ts has them
 * (charges.ts says what they record): `charge`, `charge_then_fail`, `ask_then_charge` (its
 * question the 2026-07-28 way: an `input_required` round) and `echo_request`. A cancel of an
 * effect tool's call is recorded and changes nothing: it answers all the same.
 *
 *   node --import tsx test/conformance/tasks-upstream.ts --stdio --dir <dir>
 */
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  type CallToolResult,
  type InputRequiredResult,
  type InputResponses,
  inputRequired,
  inputResponse,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { keyOf, recordAsked, recordCancel, recordCharge, released } from './charges.js';

type ToolOutcome = CallToolResult | InputRequiredResult;

interface FixtureTool<Args extends z.ZodType> {
  description: string;
  args: Args;
  annotations?: Tool['annotations'];
  run(args: z.output<Args>, ctx: ServerContext): Promise<ToolOutcome>;
}

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

/** A tool table entry, typed by its own argument schema. */
const tool = <Args extends z.ZodType>(definition: FixtureTool<Args>) => definition;

/** How often `slow_compute` looks for its release file. */
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

/** Resolves once `path` exists, or rejects as soon as the call is cancelled. */
async function waitForFile(path: string, signal: AbortSignal): Promise<void> {
  while (!existsSync(path)) await waitFor(RELEASE_POLL_MS, signal);
}

/** The content of an accepted elicitation answer under `key`, or what the client did instead. */
function elicited(
  responses: ServerContext['mcpReq']['inputResponses'],
  key: string,
): { action: 'accept' | 'decline' | 'cancel'; content: Record<string, unknown> } | undefined {
  const view = inputResponse(responses as InputResponses | undefined, key);
  if (view.kind !== 'elicit') return undefined;
  return { action: view.action, content: (view.content ?? {}) as Record<string, unknown> };
}

const askForm = (message: string, properties: Record<string, unknown>, required: string[] = []) =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties, required } } as Parameters<
    typeof inputRequired.elicit
  >[0]);

/** What `multi_input` carries between rounds for a client that answers one request at a time. */
const answeredSoFar = (state: unknown): Record<string, string> => {
  if (typeof state !== 'string') return {};
  try {
    const parsed = JSON.parse(Buffer.from(state, 'base64url').toString('utf8')) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
};

const MULTI_INPUT_KEYS = ['first', 'second'] as const;

/** The tools the tasks scenarios name, and nothing else. */
const TOOLS = {
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
      release_file: z
        .string()
        .optional()
        .describe('Work until this file exists instead of `seconds` (a test says when).'),
    }),
    run: async ({ seconds, label, release_file }, ctx) => {
      const started = Date.now();
      if (release_file) await waitForFile(release_file, ctx.mcpReq.signal);
      else await waitFor(seconds * 1000, ctx.mcpReq.signal);
      return text(`Computed ${label} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
  }),
  failing_job: tool({
    description: 'Always fails as a tool: an isError result after `seconds` (default 1).',
    args: z.object({ seconds: z.number().min(0).max(3600).default(1) }),
    run: async ({ seconds }, ctx) => {
      await waitFor(seconds * 1000, ctx.mcpReq.signal);
      return { ...text('failing_job: the job ran and reported a failure'), isError: true };
    },
  }),
  protocol_error_job: tool({
    description: 'Always fails at the protocol level: a JSON-RPC internal error (-32603), not a result.',
    args: z.object({}),
    run: async () => {
      throw new ProtocolError(ProtocolErrorCode.InternalError, 'protocol_error_job: internal failure');
    },
  }),
  confirm_delete: tool({
    description:
      'Asks one confirmation ("confirm", an elicitation) before it deletes; answered, it completes either way.',
    args: z.object({ filename: z.string() }),
    annotations: { destructiveHint: true },
    run: async ({ filename }, ctx) => {
      const answer = elicited(ctx.mcpReq.inputResponses, 'confirm');
      if (!answer)
        return inputRequired({
          inputRequests: { confirm: askForm(`Delete ${filename}?`, { confirm: { type: 'boolean' } }) },
        });
      const confirmed = answer.action === 'accept' && answer.content.confirm !== false;
      return text(confirmed ? `Deleted ${filename}` : `Kept ${filename} (${answer.action})`);
    },
  }),
  multi_input: tool({
    description:
      'Asks two inputs at once ("first" and "second", elicitations) and completes once both are answered.',
    args: z.object({}),
    run: async (_args, ctx) => {
      const answers = answeredSoFar(ctx.mcpReq.requestState());
      for (const key of MULTI_INPUT_KEYS) {
        const answer = elicited(ctx.mcpReq.inputResponses, key);
        if (answer) answers[key] = String(answer.content.name ?? answer.action);
      }
      const missing = MULTI_INPUT_KEYS.filter((key) => answers[key] === undefined);
      if (missing.length === 0) return text(`Inputs received: ${answers.first}, ${answers.second}`);
      return inputRequired({
        inputRequests: Object.fromEntries(
          missing.map((key) => [
            key,
            askForm(`The ${key} input?`, { name: { type: 'string' }, confirm: { type: 'boolean' } }),
          ]),
        ),
        // A client may answer one request per round: what it already answered rides along.
        ...(Object.keys(answers).length > 0
          ? { requestState: Buffer.from(JSON.stringify(answers)).toString('base64url') }
          : {}),
      });
    },
  }),
  test_tool_with_task: tool({
    description:
      'Asks a name ("user_name", an elicitation) first; answered, it completes with a text that names it.',
    args: z.object({}),
    run: async (_args, ctx) => {
      const answer = elicited(ctx.mcpReq.inputResponses, 'user_name');
      if (!answer)
        return inputRequired({
          inputRequests: {
            user_name: askForm('What is your name?', { name: { type: 'string' } }, ['name']),
          },
        });
      const name = answer.action === 'accept' ? String(answer.content.name ?? 'friend') : 'friend';
      return text(`Hello, ${name}! The work that began with your answer is done.`);
    },
  }),
} satisfies Record<string, FixtureTool<z.ZodType>>;

/** The effect tools (charges.ts), with --dir: the key of each call in flight, by request id. */
function effectTools(dir: string): Record<string, FixtureTool<z.ZodType>> {
  const keyed = z.object({ key: z.string(), release_file: z.string().optional() });
  return {
    charge: tool({
      description: 'Charges `key`, then answers once `release_file` exists (at once without one).',
      args: keyed,
      run: async ({ key, release_file }) => {
        recordCharge(dir, key);
        await released(dir, release_file);
        return text(`charged ${key}`);
      },
    }),
    charge_then_fail: tool({
      description:
        'Charges `key`, then fails with a plain error: the upstream acted, then answered an error.',
      args: z.object({ key: z.string() }),
      run: async ({ key }) => {
        recordCharge(dir, key);
        throw new Error(`charged ${key}, then the receipt could not be written`);
      },
    }),
    ask_then_charge: tool({
      description: 'Asks `confirm` first; accepted, charges `key` and answers once `release_file` exists.',
      args: keyed,
      run: async ({ key, release_file }, ctx) => {
        const answer = elicited(ctx.mcpReq.inputResponses, 'confirm');
        if (!answer) {
          recordAsked(dir, key);
          return inputRequired({
            inputRequests: { confirm: askForm(`Charge ${key}?`, { confirm: { type: 'boolean' } }) },
          });
        }
        if (answer.action !== 'accept' || answer.content.confirm === false)
          return text(`not charged ${key} (${answer.action})`);
        recordCharge(dir, key);
        await released(dir, release_file);
        return text(`charged ${key}`);
      },
    }),
    echo_request: tool({
      description: 'Answers with what its request carried besides the arguments (its _meta and envelope).',
      args: z.object({}),
      annotations: { readOnlyHint: true },
      run: async (_args, ctx) =>
        text(JSON.stringify({ meta: ctx.mcpReq._meta ?? null, envelope: ctx.mcpReq.envelope ?? null })),
    }),
  };
}

const EFFECT_TOOLS = new Set(['charge', 'charge_then_fail', 'ask_then_charge']);

/** One server instance: stdio builds one per connection, HTTP one per request. */
export function createTasksUpstream(dir?: string): Server {
  const tools: Record<string, FixtureTool<z.ZodType>> = { ...TOOLS, ...(dir ? effectTools(dir) : {}) };
  const isToolName = (name: unknown): name is string =>
    typeof name === 'string' && Object.hasOwn(tools, name);
  const server = new Server(
    { name: 'idem-tasks-upstream', version: '1.0.0' },
    {
      capabilities: { tools: {} },
      instructions: 'A plain upstream with the tools the tasks conformance scenarios name, and no tasks.',
    },
  );
  /** Calls of effect tools in flight, by request id: a cancel of one is recorded and changes nothing. */
  const effects = new Map<string | number, string>();
  // Any other call is cancelled as the SDK does it: its own handler, which this one replaces, is private.
  const sdkCancel = (server as unknown as { _oncancel(n: unknown): Promise<void> })._oncancel.bind(server);
  server.setNotificationHandler('notifications/cancelled', async (notification) => {
    // A cancel read with its call (one chunk) comes before the call's handler has begun: after this
    // turn it has, and says whether it is an effect tool's.
    await new Promise((resolve) => setImmediate(resolve));
    const { requestId } = notification.params;
    const key = requestId === undefined ? undefined : effects.get(requestId);
    if (key !== undefined && dir) return recordCancel(dir, key);
    await sdkCancel(notification);
  });
  server.setRequestHandler('tools/list', () => ({
    tools: Object.entries(tools).map(([name, definition]) => ({
      name,
      description: definition.description,
      inputSchema: z.toJSONSchema(definition.args, { io: 'input' }) as Tool['inputSchema'],
      ...('annotations' in definition ? { annotations: definition.annotations } : {}),
    })),
  }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const { name, arguments: args } = request.params;
    if (!isToolName(name)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const definition = tools[name] as FixtureTool<z.ZodType>;
    const parsed = definition.args.safeParse(args ?? {});
    if (!parsed.success)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid arguments for ${name}: ${z.prettifyError(parsed.error)}`,
      );
    if (EFFECT_TOOLS.has(name)) effects.set(ctx.mcpReq.id, keyOf(parsed.data));
    try {
      return await definition.run(parsed.data, ctx);
    } finally {
      effects.delete(ctx.mcpReq.id);
    }
  });
  return server;
}

async function main(argv: string[]): Promise<void> {
  const dirIndex = argv.indexOf('--dir');
  const dir = dirIndex >= 0 ? argv[dirIndex + 1] : undefined;
  if (argv.includes('--stdio')) {
    serveStdio(() => createTasksUpstream(dir));
    return;
  }
  const portIndex = argv.indexOf('--port');
  const port = portIndex >= 0 ? Number(argv[portIndex + 1]) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write('usage: tasks-upstream.ts --stdio | --port <n> (0: any free port)\n');
    process.exit(2);
  }
  // Over HTTP only for a direct run of the suite (what the upstream does without a gateway in front).
  const [{ createServer }, { toNodeHandler }, { createMcpHandler }] = await Promise.all([
    import('node:http'),
    import('@modelcontextprotocol/node'),
    import('@modelcontextprotocol/server'),
  ]);
  const handler = toNodeHandler(createMcpHandler(() => createTasksUpstream(dir)));
  const http = createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    void handler(req, res);
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  const address = http.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  process.stdout.write(`listening http://127.0.0.1:${address.port}/mcp\n`);
  const stop = () => http.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
