// Longer than most files on purpose: this is the wiring of the gateway — store, engine, catalog,
// fronts, shared upstream connections, action tools, sweeper, head signing — and only the wiring;
// each part it wires lives in its own file (config-specs, session-*, action-tools, front/).
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { expirePending } from '../approval/decide.js';
import type { ProbeAnswer, StatusProbe } from '../contracts/contract.js';
import { durationMs } from '../contracts/duration.js';
import { CredentialError, Credentials } from '../credentials/index.js';
import type { ActionTool } from '../dispatch/channel.js';
import type { UpstreamConnection, UpstreamSpec } from '../dispatch/mcp/index.js';
import { ExecutionEngine, type Logger } from '../executions/engine.js';
import type { FrontAuth } from '../front/auth/index.js';
import type { Readiness } from '../front/health.js';
import { type ServedHttp, serveHttpFront } from '../front/http.js';
import { defaultActorOf } from '../identity/actor.js';
import { resolveDataDir } from '../identity/data-dir.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { KnownSecrets } from '../identity/redaction.js';
import { signJournalHeads } from '../journal/head-signer.js';
import { metricsObserver } from '../metrics/calls.js';
import { createMetrics, type IdemMetrics } from '../metrics/metrics.js';
import { measuredStore } from '../metrics/store.js';
import type { ProtocolEra } from '../protocol/eras.js';
import { ReceiptBook } from '../receipts/receipt-book.js';
import { type IdScope, ReceiptTransport } from '../receipts/receipt-transport.js';
import { openDataDirStore } from '../store/index.js';
import type { ExecutionStore } from '../store/types.js';
import { type Log, scrubbedLog } from '../support/log.js';
import { actionToolsOf, closeActionTools } from './action-tools.js';
import { type CatalogEntry, cautiousDefaultNotice, ToolCatalog } from './catalog.js';
import { ConfigError, expandEnv, type GatewayConfig, NAME_SEPARATOR } from './config.js';
import { frontAuthOf, storeSpecOf } from './config-specs.js';
import { checkContracts } from './contract-check.js';
import { isLoopbackHost, unauthenticatedExposure } from './exposure.js';
import { startPooledUpstreams } from './pooled-upstreams.js';
import { ProxySession, type SessionContext, type SharedUpstreams, startSharedUpstreams } from './session.js';
import { sessionBoundsOf } from './session-bounds.js';
import { ToolNameGuard } from './tool-names.js';
import type { ToolOverrides } from './tool-overrides.js';
import { upstreamEnvironment } from './upstream-env.js';
import { logSkippedLine, logUpstreamLifecycle, logUpstreamRestart } from './upstream-log.js';

export interface GatewayOptions {
  version: string;
  logger?: Logger;
  /** stderr of stdio upstreams (default: inherit, so an operator sees it). */
  upstreamStderr?: 'inherit' | 'ignore' | 'pipe';
  /** Now (ms): for HTTP sessions' idleness and OAuth tokens' lifetimes. Default: the system clock; tests inject one. */
  clock?: () => number;
  /**
   * The config names a tool that is not published, in a way that must stop the gateway (a scope,
   * an approval; any entry at an upstream's first listing): `idem gateway` exits. From then on the
   * gateway runs no tool, whether or not this is given.
   */
  onConfigFault?(error: ConfigError): void;
  /** Contracts from the command line (`--read-only`, `--tool`); they win over the config's `tools:`. */
  toolOverrides?: ToolOverrides;
}

/**
 * `idem gateway`: an MCP server in front of upstream MCP servers. Every
 * side-effecting tools/call gets receipts, an execution identity and a
 * contract; everything else passes through.
 */
export class Gateway {
  readonly store: ExecutionStore;
  /** This gateway's Prometheus metrics (served by `metrics:`; see docs/console.md). */
  readonly metrics: IdemMetrics;
  readonly engine: ExecutionEngine;
  readonly receipts: ReceiptBook;
  readonly dataDir: string;
  /** HTTP (and SSH) tools declared in the config, performed by the gateway itself. */
  readonly actionTools: readonly ActionTool[];
  readonly #config: GatewayConfig;
  readonly #options: GatewayOptions;
  /** Credential values to scrub from what the gateway writes (results, and its log of internal errors). */
  readonly #knownSecrets: KnownSecrets;
  /** The operator's log (options.logger), every line scrubbed of the configured credentials. */
  readonly #log: Log;
  readonly #fingerprinter: Fingerprinter;
  readonly #sessions = new Set<ProxySession>();
  readonly #sweeper: NodeJS.Timeout;
  /** Who may call the HTTP front (auth.bearer, auth.oauth); undefined: anyone on loopback. */
  readonly #auth: FrontAuth | undefined;
  /** Tools listed with a read-only contract: the receipt layer leaves their calls alone. */
  readonly #readOnlyTools = new Set<string>();
  /** Tools already named as on the cautious default: each is named once per process. */
  readonly #namedCautious = new Set<string>();
  /** The config's tool names, checked whenever an upstream's tools are listed; a fault stops every tool. */
  readonly #toolNames: ToolNameGuard;
  #http: ServedHttp | undefined;
  /** The signing of the journal heads under way, if any. */
  #signing: Promise<void> | undefined;

  private constructor(
    config: GatewayConfig,
    options: GatewayOptions,
    store: ExecutionStore,
    dataDir: string,
    knownSecrets: KnownSecrets,
    actionTools: ActionTool[],
  ) {
    this.#config = config;
    this.#options = options;
    this.#knownSecrets = knownSecrets;
    this.#log = gatewayLog(options.logger, knownSecrets);
    this.metrics = createMetrics({ receiptsInUse: () => this.receipts.size });
    // Every store operation is measured at one place, whoever calls it (engine, sweeper, sessions).
    this.store = measuredStore(store, this.metrics);
    this.dataDir = dataDir;
    this.actionTools = actionTools;
    this.#toolNames = new ToolNameGuard(config, {
      warn: (message) => {
        // An operator must not miss it.
        if (options.logger) options.logger.warn(message);
        else process.stderr.write(`idem gateway: ${message}\n`);
      },
      fault: (error) => {
        options.logger?.error(error.message);
        options.onConfigFault?.(error);
      },
    });
    this.#fingerprinter = Fingerprinter.forDataDir(
      dataDir,
      config.fingerprint_key_file ? { keyFile: config.fingerprint_key_file } : {},
    );
    this.engine = new ExecutionEngine({
      store: this.store,
      fingerprinter: this.#fingerprinter,
      statusTool: config.status_tool,
      knownSecrets,
      observer: metricsObserver(this.metrics),
      ...(options.logger ? { logger: this.#log } : {}),
    });
    this.receipts = new ReceiptBook({
      ...(config.receipts?.max ? { maxReceipts: config.receipts.max } : {}),
      ...(config.receipts?.max_per_actor ? { maxReceiptsPerActor: config.receipts.max_per_actor } : {}),
      ...(config.receipts?.retention !== undefined
        ? { retentionMs: durationMs(config.receipts.retention, 'receipts.retention') }
        : {}),
    });
    this.#auth = frontAuthOf(config, options.clock);
    const retentionMs = durationMs(config.retention, 'retention');
    this.#sweeper = setInterval(
      () => {
        this.receipts.trim();
        this.store
          .sweep({ retentionMs })
          // Approval requests nobody decided in time end as denied (`expired`), visible as such in the queue.
          .then(() => expirePending(this.store))
          .catch((error: unknown) => this.#log.warn('sweep failed', { error: String(error) }))
          // Each sweep leaves what was journaled so far covered by a signature (docs/security.md).
          .then(() => this.#signHeads());
      },
      durationMs(config.sweep_interval, 'sweep_interval'),
    );
    this.#sweeper.unref();
  }

  static async start(config: GatewayConfig, options: GatewayOptions): Promise<Gateway> {
    const dataDir = resolveDataDir(config.data_dir);
    // Credentials and action tools are checked before the store opens: a credential file others
    // can read, or a tool whose URLs cannot be confined, stops the start.
    const knownSecrets = new KnownSecrets();
    let credentials: Credentials;
    try {
      credentials = Credentials.fromConfig(config.credentials, knownSecrets);
    } catch (error) {
      if (error instanceof CredentialError) throw new ConfigError(error.message);
      throw error;
    }
    const actionTools = actionToolsOf(config, credentials);
    checkContracts(config, actionTools);
    const store = await openDataDirStore(storeSpecOf(config, dataDir), dataDir);
    return new Gateway(config, options, store, dataDir, knownSecrets, actionTools);
  }

  get upstreams(): UpstreamSpec[] {
    return Gateway.upstreamSpecs(this.#config);
  }

  /**
   * The upstreams of a config, with `${VAR}` in HTTP header values taken from
   * the environment, and each stdio upstream's environment as it inherits it.
   */
  static upstreamSpecs(config: GatewayConfig): UpstreamSpec[] {
    return Object.entries(config.upstreams).map(([name, spec]) =>
      'url' in spec
        ? {
            name,
            url: spec.url,
            ...(spec.headers
              ? {
                  headers: Object.fromEntries(
                    Object.entries(spec.headers).map(([k, v]) => [k, expandEnv(v)]),
                  ),
                }
              : {}),
          }
        : {
            name,
            command: spec.command,
            ...(spec.args ? { args: spec.args } : {}),
            ...(spec.cwd ? { cwd: spec.cwd } : {}),
            env: upstreamEnvironment(config, spec),
          },
    );
  }

  /** Serves one client over stdio (this process's stdin/stdout). */
  async serveStdio(transport: Transport = new StdioServerTransport()): Promise<ProxySession> {
    const wrapped = this.#wrap(transport, 'connection');
    const session = await this.#attach(wrapped);
    // The SDK's stdio transport drops a line that is not a JSON-RPC message and only reports it;
    // JSON-RPC 2.0 wants an answer with id null: -32700 for bad JSON, -32600 for a bad message.
    const reported = wrapped.onerror;
    wrapped.onerror = (error) => {
      const parse = error instanceof SyntaxError;
      if (parse || error.name === 'ZodError') {
        const message = parse
          ? 'Parse error: the line is not valid JSON'
          : 'Invalid Request: not a JSON-RPC 2.0 message';
        void transport
          .send({
            jsonrpc: '2.0',
            id: null,
            error: { code: parse ? -32700 : -32600, message },
          } as unknown as JSONRPCMessage)
          .catch(() => {});
      }
      reported?.(error);
    };
    return session;
  }

  /**
   * Serves clients over Streamable HTTP. Without auth it warns (the actor is
   * whatever the client says it is), and refuses a non-loopback address unless
   * `listen.http.allow_unauthenticated` is set.
   */
  async serveHttp(): Promise<ServedHttp> {
    const http = this.#config.listen?.http;
    const stateless = http?.stateless ?? false;
    const host = http?.host ?? '127.0.0.1';
    if (this.#config.auth?.oauth && !this.#config.auth.oauth.resource && !isLoopbackHost(host)) {
      // The front's own address is not what clients reach from elsewhere (a proxy, a DNS name).
      throw new ConfigError(
        `auth.oauth.resource is required when listening on ${host}: set it to the URL clients use to reach the gateway (tokens name it as their audience).`,
      );
    }
    if (!this.#auth) {
      const exposure = unauthenticatedExposure({
        host,
        stateless,
        allowed: http?.allow_unauthenticated ?? false,
      });
      if (exposure.refuse) throw new ConfigError(exposure.message);
      // Said even without a logger: an operator must not miss it.
      if (this.#options.logger) this.#log.warn(exposure.message);
      else process.stderr.write(`idem gateway: ${exposure.message}\n`);
    }
    const timeout = (key: 'headers' | 'request' | 'idle') => {
      const value = http?.timeouts?.[key];
      return value === undefined ? undefined : durationMs(value, `listen.http.timeouts.${key}`);
    };
    const timeouts = Object.fromEntries(
      (
        [
          ['headersMs', timeout('headers')],
          ['requestMs', timeout('request')],
          ['idleMs', timeout('idle')],
        ] as const
      ).filter(([, ms]) => ms !== undefined),
    );
    this.#http = await serveHttpFront({
      host,
      timeouts,
      port: http?.port ?? 8787,
      path: http?.path ?? '/mcp',
      stateless,
      ...sessionBoundsOf(http),
      // The caps count a session against the actor it will have (a token's subject, or the client's name locally).
      sessionActorOf: (authInfo, clientName) =>
        defaultActorOf({ ...(authInfo ? { authInfo } : {}), ...(clientName ? { clientName } : {}) }),
      // An idle close is routine; an eviction may cut off a client that meant to come back: said.
      onSessionClosed: ({ actor, reason }) => {
        if (reason === 'evicted')
          this.#options.logger?.warn(
            'an HTTP session with nothing in progress was closed to make room for a new one of the same actor or past listen.http.max_sessions; its client gets 404 and must initialize again',
            { actor },
          );
      },
      ...(this.#options.clock ? { clock: this.#options.clock } : {}),
      ...(http?.allowed_hosts ? { allowedHosts: http.allowed_hosts } : {}),
      ...(http?.allowed_origins ? { allowedOrigins: http.allowed_origins } : {}),
      ...(this.#auth ? { auth: this.#auth } : {}),
      readiness: () => this.readiness(),
      wrap: (transport) => this.#wrap(transport, stateless ? 'none' : 'session'),
      attach: async (transport) =>
        this.#attach(transport, stateless ? await this.#sharedUpstreams('legacy') : undefined),
      // 2026-07-28 requests have no session, in either mode: ids without session scope.
      modern: {
        wrap: (transport) => this.#wrap(transport, 'none'),
        attach: async (transport) => {
          await this.#attach(transport, await this.#sharedUpstreams('modern'));
        },
      },
    });
    return this.#http;
  }

  /**
   * Ready: the store answers a read (within 2 s), and no upstream is down
   * (being restarted) in any live session or shared set. An upstream nobody
   * has started yet is not down: it starts with the session that needs it.
   */
  async readiness(): Promise<Readiness> {
    let timer: NodeJS.Timeout | undefined;
    const storeAnswers = await Promise.race([
      this.store.get('exe_readiness_probe').then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), 2_000);
      }),
    ]).finally(() => clearTimeout(timer));
    const connections: UpstreamConnection[] = [...this.#sessions].flatMap((s) => [...s.upstreamConnections]);
    for (const opening of this.#shared.values()) {
      const shared = await opening.catch(() => undefined);
      if (shared) connections.push(...shared.upstreams.values());
    }
    const down = new Set(connections.filter((c) => c.down).map((c) => c.name));
    return {
      ready: storeAnswers && down.size === 0,
      store: storeAnswers ? 'ok' : 'unreachable',
      upstreams: { configured: Object.keys(this.#config.upstreams).length, down: down.size },
    };
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    await this.#http?.close();
    await Promise.all([...this.#sessions].map((s) => s.close()));
    for (const opening of [...this.#shared.values(), ...(this.#pool ? [this.#pool] : [])]) {
      const shared = await opening.catch(() => undefined);
      if (shared) await Promise.all([...shared.upstreams.values()].map((u) => u.close()));
    }
    await closeActionTools(this.actionTools);
    // What was journaled up to now leaves covered by a signature (after any signing under way, which may predate it).
    await this.#signing;
    await this.#signHeads();
    await this.store.close();
  }

  /**
   * Signs the journals' heads, when the key can be read: a key owned by
   * another user (signing from its own `idem audit sign`) is not an error. A
   * refusal (journal behind its last signed head) is logged every time.
   */
  async #signHeads(): Promise<void> {
    // A slow signing (a big store, a busy disk) is not run twice at once: both would write journal-head.json.
    this.#signing ??= this.#signHeadsNow().finally(() => {
      this.#signing = undefined;
    });
    return this.#signing;
  }

  async #signHeadsNow(): Promise<void> {
    const keyFile = this.#config.journal_signing_key_file;
    await signJournalHeads(this.store, this.dataDir, keyFile ? { keyFile } : {}).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') return;
      this.#log.warn('journal heads not signed', { error: String(error) });
    });
  }

  #wrap(transport: Transport, idScope: IdScope): ReceiptTransport {
    return new ReceiptTransport(transport, {
      book: this.receipts,
      fingerprinter: this.#fingerprinter,
      actorOf: defaultActorOf,
      idScope,
      // The receipt layer cannot see contracts; the status tool is the one call it knows is read-only.
      // Reads pass straight through (docs/lifecycle.md, step 2): the status tool, and tools whose contract is read-only.
      hasEffects: (tool) => tool !== this.#config.status_tool && !this.#readOnlyTools.has(tool),
      onEvent: (event) => {
        this.store.appendEvents([event]).catch(() => {});
      },
      onAnswered: (how) => this.metrics.receiptAnswers.inc({ answer: how }),
    });
  }

  /**
   * Stateless fronts and 2026-07-28 clients share one set of upstream
   * connections per revision family, opened on first use: a 2026-07-28
   * client's set speaks that revision to every upstream that does, so what
   * only it can say passes through unchanged.
   */
  readonly #shared = new Map<ProtocolEra, Promise<SharedUpstreams>>();
  #sharedUpstreams(era: ProtocolEra): Promise<SharedUpstreams> {
    let opening = this.#shared.get(era);
    if (!opening) {
      opening = startSharedUpstreams(this.#sessionContext(), era).catch((error: unknown) => {
        this.#shared.delete(era);
        throw error;
      });
      this.#shared.set(era, opening);
    }
    return opening;
  }

  /** The connections to the upstreams configured `share: true`, opened when a session first needs them. */
  #pool: Promise<SharedUpstreams> | undefined;
  #pooledUpstreams(): Promise<SharedUpstreams> {
    this.#pool ??= startPooledUpstreams(this.#sessionContext()).catch((error: unknown) => {
      this.#pool = undefined;
      throw error;
    });
    return this.#pool;
  }

  async #attach(transport: ReceiptTransport, shared?: SharedUpstreams): Promise<ProxySession> {
    const session = new ProxySession({ ...this.#sessionContext(), ...(shared ? { shared } : {}) }, transport);
    this.#sessions.add(session);
    const closed = transport.onclose;
    transport.onclose = () => {
      closed?.();
      this.#sessions.delete(session);
    };
    await session.start();
    return session;
  }

  #sessionContext(): SessionContext {
    const upstreams = this.upstreams;
    return {
      engine: this.engine,
      upstreams,
      statusTool: this.#config.status_tool,
      actorOf: defaultActorOf,
      ...(this.#auth ? { scopesMissing: (auth, tool) => this.#auth?.scopesMissing(auth, tool) ?? [] } : {}),
      configFault: () => this.#toolNames.fault,
      version: this.#options.version,
      upstreamWaitMs: 2_000,
      sharedUpstreams: () => this.#sharedUpstreams('modern'),
      pooled: new Set(
        Object.entries(this.#config.upstreams)
          .filter(([, spec]) => spec.share)
          .map(([name]) => name),
      ),
      pooledUpstreams: () => this.#pooledUpstreams(),
      onRequestFailed: (method, error) =>
        // The configured credentials are scrubbed from it (#log), as from every result.
        this.#log.error('a request failed inside the gateway; it was answered with an internal error', {
          method,
          error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        }),
      onSessionEvent: (kind, detail) => {
        const { actor, session, ...rest } = detail as { actor?: string; session?: string | null };
        this.store
          .appendEvents(
            [{ kind, actor: actor ?? null, requestRef: session ?? null, detail: rest as never }],
            'sessions',
          )
          .catch(() => {});
      },
      onUpstreamRestart: ({ upstream, attempt, delayMs, reason, session, actor }) => {
        this.metrics.upstreamRestarts.inc({ upstream });
        // A restarted upstream has lost whatever state it held: say so where a user looks, and keep it.
        logUpstreamRestart(this.#log, { upstream, session }, { attempt, delayMs, reason });
        this.store
          .appendEvents(
            [
              {
                kind: 'upstream_restart',
                actor,
                requestRef: session,
                detail: { upstream, attempt, delay_ms: delayMs, reason },
              },
            ],
            'sessions',
          )
          .catch(() => {});
      },
      onUpstreamLifecycle: (upstream, session, event) =>
        logUpstreamLifecycle(this.#log, { upstream, session }, event),
      onInitializeRefused: (session, reason) =>
        this.#log.error(`initialize refused: ${reason}; the client may try again`, { session }),
      onUpstreamSkippedLine: (upstream, session, skipped) =>
        logSkippedLine(this.#log, (text) => this.#knownSecrets.redact(text), { upstream, session }, skipped),
      ...(this.#options.upstreamStderr ? { upstreamStderr: this.#options.upstreamStderr } : {}),
      newCatalog: () =>
        new ToolCatalog({
          contracts: this.#config.tools ?? {},
          overrides: this.#options.toolOverrides,
          prefixed: upstreams.length > 1,
          separator: NAME_SEPARATOR,
          probeFor: (name, probe) => this.#probe(name, probe),
          defaults: this.#config.defaults,
          actionTools: this.actionTools,
          statusTool: this.#config.status_tool,
          onAdd: (entries) => {
            // Contracts come from the config and the upstream's annotations, the same for every session.
            for (const entry of entries) {
              if (entry.contract.replay === 'read_only') this.#readOnlyTools.add(entry.name);
              else this.#readOnlyTools.delete(entry.name);
            }
            this.#nameCautiousDefaults(entries);
          },
          onListed: (upstream, catalog) => this.#toolNames.listed(upstream, catalog),
        }),
    };
  }

  /**
   * "Start-up" is the first time the catalog learns a tool (the first
   * tools/list of the first session: upstreams start with a session). Tools
   * with neither annotations nor a contract are named then, once per process,
   * so that whoever runs the gateway sees which calls will be replayed.
   */
  #nameCautiousDefaults(entries: CatalogEntry[]): void {
    const fresh = entries
      // An action tool's contract is declared beside it, not under tools: (the notice's advice); lint names those.
      .filter((e) => e.source === 'cautious_default' && !e.action && !this.#namedCautious.has(e.name))
      .map((e) => e.name);
    if (fresh.length === 0) return;
    for (const name of fresh) this.#namedCautious.add(name);
    this.#log.warn(cautiousDefaultNotice(fresh));
  }

  /** A declarative status probe: call an upstream tool of some live session with the execution id. */
  #probe(_name: string, probe: { tool: string; arguments?: Record<string, unknown> }): StatusProbe {
    return async ({ executionId }): Promise<ProbeAnswer> => {
      const args = JSON.parse(
        JSON.stringify(probe.arguments ?? {}).replaceAll('{execution_id}', executionId),
      );
      for (const session of this.#sessions) {
        const result = (await session.callUpstreamTool(probe.tool, args).catch(() => undefined)) as
          | CallToolResult
          | undefined;
        if (!result) continue;
        return result.isError ? { outcome: 'unknown' } : { outcome: 'completed', result };
      }
      return { outcome: 'unknown' };
    };
  }
}

/** The gateway's log: the given logger (its optional levels as no-ops), scrubbed of the known secrets. */
function gatewayLog(logger: Logger | undefined, secrets: KnownSecrets): Log {
  return scrubbedLog(
    {
      error: (message, fields) => logger?.error(message, fields),
      warn: (message, fields) => logger?.warn(message, fields),
      info: (message, fields) => logger?.info?.(message, fields),
      debug: (message, fields) => logger?.debug?.(message, fields),
    },
    (value) => secrets.redact(value),
  );
}
