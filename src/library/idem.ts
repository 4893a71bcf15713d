// `Idem` is the library's one public face (open, tool, httpTool, sshTool, connect, approve, deny, drain,
// close); the parts behind each method live in their own files (tool-config, handler-channel,
// ssh-tool, http; the channels in src/dispatch; the engine, store and maintenance in src/runtime).
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import { honestAnnotations } from '../contracts/annotations.js';
import { resolveContract, type TaskPolicy } from '../contracts/contract.js';
import { durationMs } from '../contracts/duration.js';
import { Credentials, type CredentialsConfig } from '../credentials/index.js';
import { DEFAULT_SHUTDOWN_GRACE } from '../defaults.js';
import { actionCall, actionContract, callerOf, refusedArguments } from '../dispatch/action-call.js';
import type { ActionChannel } from '../dispatch/channel.js';
import { HttpChannel, HttpToolSpecSchema } from '../dispatch/http/index.js';
import { META, STATUS_TOOL_ANNOTATIONS, STATUS_TOOL_DESCRIPTION } from '../executions/answers.js';
import type { Approver, Caller, Dispatch, Logger, TaskRequest, ToolCall } from '../executions/call.js';
import { STATUS_TOOL_INPUT, STATUS_TOOL_TITLE } from '../executions/status-tool.js';
import type { CallerInfo } from '../identity/actor.js';
import { defaultActorOf } from '../identity/actor.js';
import { secretPathsFromSchema } from '../identity/arguments.js';
import { KnownSecrets } from '../identity/redaction.js';
import { ModernBridge } from '../protocol/discover-as-initialize.js';
import { envelopeOf } from '../protocol/revisions.js';
import { TASKS_EXTENSION } from '../protocol/tasks.js';
import type { ReceiptBookOptions } from '../receipts/receipt-book.js';
import type { AdmittingTransport, IdScope } from '../receipts/receipt-transport.js';
import { Runtime } from '../runtime/index.js';
import type { StoreSpec } from '../store/index.js';
import type { ExecutionStore } from '../store/types.js';
import { handlerChannel } from './handler-channel.js';
import { type IdemSshToolConfig, sshToolChannel } from './ssh-tool.js';
import { TaskTransport } from './task-transport.js';
import type {
  IdemHttpToolConfig,
  IdemToolConfig,
  IdemToolHandler,
  ToolExtra,
  ZodShape,
} from './tool-config.js';

export interface IdemOptions {
  /** Where the SQLite file and keys live; default IDEM_DATA_DIR or a per-user directory. */
  dataDir?: string;
  /**
   * Where to open the store (`{ kind: 'sqlite' | 'postgres' | 'memory', … }`), or an open one
   * (`openStore`, shared by several Idems; its owner closes it). Default: IDEM_STORE_URL when it
   * is a `postgres://` URL, else SQLite at `<dataDir>/idem.db` — as for the gateway.
   */
  store?: ExecutionStore | StoreSpec;
  /** Who is calling. Default: token subject, else local user + client name. */
  actorOf?: (info: CallerInfo) => string;
  statusToolName?: string;
  receipts?: ReceiptBookOptions;
  /** Request-id scoping of transports passed to `connect` (default: the transport's session, else the connection). */
  idScope?: IdScope;
  approver?: Approver;
  logger?: Logger;
  /**
   * Housekeeping every this many ms: expired leases → unknown, finished
   * executions past `retention` trimmed, receipts past retention dropped,
   * journal heads signed. Default 30 s (DEFAULT_MAINTENANCE_INTERVAL, the gateway's `sweep_interval`);
   * 0 turns it off.
   */
  maintenanceIntervalMs?: number;
  /** How long finished executions are kept (default 48 h, DEFAULT_RETENTION). */
  retention?: string | number;
  /**
   * Secrets that action tools (`httpTool`) use by name, as in the gateway's
   * `credentials:` section: `{ pay: { env: 'PAY_KEY' } }` or `{ file: path }`
   * (0600, owned by this user, else `open` throws). Their values are scrubbed
   * from every result, stored or answered.
   */
  credentials?: CredentialsConfig;
}

/**
 * What stands behind an `Idem`'s public face, for the library's own modules (`serveStreamableHttp`)
 * and for tests; the package does not export it (src/index.ts).
 */
export interface IdemInside {
  /** The engine, store, receipts and maintenance (src/runtime). */
  readonly runtime: Runtime;
  /** Receipts and Idem's tasks around a transport; `idScope` overrides the Idem's. */
  wrap(transport: Transport, idScope?: IdScope): AdmittingTransport;
  /** A transport that serves 2026-07-28 clients too. */
  modern(transport: Transport): Transport;
}

const inside = new WeakMap<Idem, IdemInside>();

/** The runtime and transports behind `idem` (see IdemInside). */
export function insideOf(idem: Idem): IdemInside {
  const found = inside.get(idem);
  if (!found) throw new Error('not an Idem opened by Idem.open');
  return found;
}

/**
 * Idem as a library for MCP servers built on the official TypeScript SDK.
 *
 *     const idem = await Idem.open();
 *     idem.tool(server, 'charge_card', { inputSchema, contract }, async (args, extra) => {
 *       await processor.charge(args, { idempotencyKey: extra.idem.executionId });
 *     });
 *     await idem.connect(server, transport);
 */
export class Idem {
  /** The engine, store, receipts and maintenance, assembled as for the gateway (src/runtime). */
  readonly #runtime: Runtime;
  readonly #actorOf: (info: CallerInfo) => string;
  readonly #idScope: IdScope | undefined;
  readonly #statusRegistered = new WeakSet<McpServer>();
  readonly #effectful = new Set<string>();
  /** Each registered tool's task policy (docs/tasks.md), for the tasks layer (task-transport.ts). */
  readonly #taskPolicies = new Map<string, TaskPolicy>();
  /** The task each call may take, as the tasks layer read it from its request (keyed by its `_meta`). */
  readonly #taskRequests = new WeakMap<object, TaskRequest>();
  /** How to run each idempotent tool again (a deliberate repeat through the status tool), by name. */
  readonly #runners = new Map<
    string,
    (args: unknown, extra: ToolExtra, caller: Caller) => { call: ToolCall; dispatch: Dispatch }
  >();
  /** Credentials by name; their resolved values join the known secrets, which the engine scrubs. */
  readonly #credentials: Credentials;
  /** Channels of action tools, closed with Idem (connection pools). */
  readonly #channels: ActionChannel[] = [];

  private constructor(runtime: Runtime, credentials: Credentials, options: IdemOptions) {
    this.#runtime = runtime;
    this.#credentials = credentials;
    this.#actorOf = options.actorOf ?? defaultActorOf;
    this.#idScope = options.idScope;
    inside.set(this, {
      runtime,
      wrap: (transport, idScope) => this.#wrapTransport(transport, idScope),
      modern: (transport) => this.#modernBridge(transport),
    });
  }

  static async open(options: IdemOptions = {}): Promise<Idem> {
    // Credentials first: one that cannot be used stops the open before a store is.
    const knownSecrets = new KnownSecrets();
    const credentials = Credentials.fromConfig(options.credentials, knownSecrets);
    const runtime = await Runtime.open({
      dataDir: options.dataDir,
      store: options.store,
      statusTool: options.statusToolName,
      retention: options.retention,
      maintenanceIntervalMs: options.maintenanceIntervalMs,
      receipts: options.receipts,
      knownSecrets,
      logger: options.logger,
      approver: options.approver,
    });
    return new Idem(runtime, credentials, options);
  }

  /**
   * Registers `name` on `server` as an idempotent tool: every call is identified,
   * matched and recorded per the contract before `handler` runs, and the handler
   * gets the execution id (`extra.idem.executionId`) to pass on downstream as its
   * own idempotency key. Also registers the status tool once per server.
   */
  tool<Shape extends ZodShape>(
    server: McpServer,
    name: string,
    config: IdemToolConfig<Shape>,
    handler: IdemToolHandler<Shape>,
  ): RegisteredTool {
    return this.#register(server, name, config, handler);
  }

  /**
   * Registers `name` as an SSH action tool (docs/channels-ssh.md): each call
   * renders `ssh.command` with the arguments shell-quoted and runs it on
   * `ssh.host` under a durable marker named by the execution id, so that the
   * command runs at most once per execution, and an outcome lost on the way
   * back is read from the marker instead of running it again. The contract
   * defaults to `replay: keyed` (the marker is the key the host honours); its
   * status probe is always the marker. The private key comes from
   * `resolveCredential(ssh.host.credential)` at each call.
   */
  sshTool<Shape extends ZodShape>(
    server: McpServer,
    name: string,
    config: IdemSshToolConfig<Shape>,
  ): RegisteredTool {
    const tool = sshToolChannel(name, config);
    return this.#register(server, name, tool.config, tool.channel);
  }

  /**
   * Registers an HTTP action tool (the gateway's `http_tools:` channel, in
   * code): Idem builds and sends the request itself — execution id as the
   * `Idempotency-Key`, credential by name, SSRF guards — under the contract.
   */
  httpTool<Shape extends ZodShape>(
    server: McpServer,
    name: string,
    config: IdemHttpToolConfig<Shape>,
  ): RegisteredTool {
    const { http, ...toolConfig } = config;
    const spec = HttpToolSpecSchema.parse({
      ...http,
      description: config.description,
      ...(config.contract ? { contract: config.contract } : {}),
    });
    const channel = new HttpChannel(name, spec, { credentials: this.#credentials });
    this.#channels.push(channel);
    return this.#register(server, name, toolConfig, channel);
  }

  #register<Shape extends ZodShape>(
    server: McpServer,
    name: string,
    config: IdemToolConfig<Shape>,
    perform: IdemToolHandler<Shape> | ActionChannel,
  ): RegisteredTool {
    const secrets = secretPathsFromSchema(jsonSchemaOf(config.inputSchema));
    const declared =
      typeof perform === 'function' ? config.contract : actionContract(config.contract, perform);
    const contract = resolveContract(declared, config.annotations, secrets);
    this.#runtime.engine.registerContract(name, contract);
    if (contract.replay !== 'read_only') this.#effectful.add(name);
    this.#taskPolicies.set(name, contract.task);
    this.#ensureStatusTool(server);

    const { contract: _contract, ...sdkConfig } = config;
    const runner = (args: unknown, extra: ToolExtra, caller: Caller) =>
      actionCall(
        name,
        typeof perform === 'function' ? handlerChannel(perform, extra) : perform,
        contract,
        args as Record<string, unknown>,
        caller,
        extra.signal,
      );
    this.#runners.set(name, runner);
    return server.registerTool(
      name,
      {
        ...sdkConfig,
        annotations: honestAnnotations(config.annotations, contract),
      },
      (async (args: z.output<z.ZodObject<Shape>>, extra: ToolExtra) => {
        const refused = typeof perform === 'function' ? undefined : refusedArguments(perform, args);
        if (refused) return refused;
        const { call, dispatch } = runner(args, extra, this.#caller(server, extra, name));
        // A gateway in front (or any caller) that names the action with its own key: same key, same action.
        const key = extra._meta?.[META.executionId];
        // A client that can take a task for this call (task-transport.ts read it from the request).
        const task = extra._meta ? this.#taskRequests.get(extra._meta) : undefined;
        return this.#runtime.engine.execute(
          {
            ...call,
            ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
            ...(task ? { task } : {}),
          },
          dispatch,
        );
      }) as never,
    );
  }

  /**
   * Connects `server` to `transport` with request receipts (layer 1) and
   * Idem's tasks in between; 2026-07-28 clients are served too (ModernBridge).
   */
  async connect(server: McpServer, transport: Transport): Promise<void> {
    await server.connect(this.#wrapTransport(this.#modernBridge(transport)));
  }

  /** A transport that serves 2026-07-28 clients too, with Idem's tasks extension in its `server/discover`. */
  #modernBridge(transport: Transport): ModernBridge {
    return new ModernBridge(transport, { extensions: { [TASKS_EXTENSION]: {} } });
  }

  /**
   * Receipts and Idem's tasks (task-transport.ts) around a transport; `idScope` overrides the
   * Idem's (a 2026-07-28 request has no session). Idem answers `tasks/*` itself: a server with
   * Idem's tools does not use the SDK's own experimental tasks.
   */
  #wrapTransport(transport: Transport, idScope?: IdScope): TaskTransport {
    const receipts = this.#runtime.receiptTransport(transport, {
      actorOf: this.#actorOf,
      hasEffects: (tool) => this.#effectful.has(tool),
      idScope: idScope ?? this.#idScope,
    });
    return new TaskTransport(receipts, {
      tasks: this.#runtime.engine,
      actorOf: this.#actorOf,
      policyOf: (tool) => this.#taskPolicies.get(tool),
      requests: this.#taskRequests,
    });
  }

  /**
   * Shutting down — call it from your server's SIGTERM handler, then close(): new calls are
   * answered IDEM_NOT_EXECUTED (nothing runs; a retry runs it), and the calls under way finish and
   * are recorded, for up to `graceMs` (the gateway's `shutdown_grace` default). True when they all
   * did; what outlives the grace becomes `unknown`.
   */
  drain(graceMs = durationMs(DEFAULT_SHUTDOWN_GRACE, 'grace')): Promise<boolean> {
    return this.#runtime.engine.drain(graceMs);
  }

  /**
   * A human approved an execution waiting for approval (`approval: every_call | session`): the
   * next matching call dispatches it, or at once if it is an MCP task this process holds. False
   * when it was no longer waiting (decided, expired). Journaled `via: api`, by `by`.
   */
  async approve(ref: string, by: string): Promise<boolean> {
    return (await this.#runtime.engine.approve(ref, by)) !== undefined;
  }

  /** The same, denied with a reason: the caller and every retry in the window get IDEM_DENIED. */
  async deny(ref: string, by: string, reason: string): Promise<boolean> {
    return (await this.#runtime.engine.deny(ref, by, reason)) !== undefined;
  }

  async close(): Promise<void> {
    this.#runtime.stopMaintenance();
    // Outcomes still held for the store are given up now (logged), not retried against a closed one.
    await this.#runtime.engine.stopFollowing();
    await Promise.all(this.#channels.map((c) => c.close?.()));
    await this.#runtime.close();
  }

  #callerActor(server: McpServer, extra: ToolExtra): string {
    // A 2026-07-28 request names its client itself (there may have been no server/discover).
    const named = envelopeOf({ _meta: extra._meta }).clientInfo?.name;
    const clientName =
      server.server.getClientVersion()?.name ?? (typeof named === 'string' ? named : undefined);
    return this.#actorOf({
      ...(extra.authInfo ? { authInfo: extra.authInfo } : {}),
      ...(clientName ? { clientName } : {}),
    });
  }

  #caller(server: McpServer, extra: ToolExtra, tool: string): Caller {
    return callerOf({
      actor: this.#callerActor(server, extra),
      session: extra.sessionId ?? null,
      requestId: extra.requestId,
      tool,
      authInfo: extra.authInfo,
    });
  }

  #ensureStatusTool(server: McpServer): void {
    if (this.#statusRegistered.has(server)) return;
    this.#statusRegistered.add(server);
    const { engine } = this.#runtime;
    const statusTool = engine.statusTool;
    server.registerTool(
      statusTool,
      {
        title: STATUS_TOOL_TITLE,
        description: STATUS_TOOL_DESCRIPTION,
        inputSchema: STATUS_TOOL_INPUT,
        annotations: STATUS_TOOL_ANNOTATIONS,
      },
      async ({ ref, action }, extra) => {
        if (action !== 'repeat') return engine.status(ref, this.#callerActor(server, extra));
        const caller = this.#caller(server, extra, statusTool);
        return engine.repeat(ref, caller, async (remembered) => {
          const runner = this.#runners.get(remembered.tool);
          return runner?.(remembered.arguments, extra, caller);
        });
      },
    );
  }
}

function jsonSchemaOf(shape: ZodShape): unknown {
  try {
    return z.toJSONSchema(z.object(shape), { io: 'input', unrepresentable: 'any' });
  } catch {
    return undefined;
  }
}
