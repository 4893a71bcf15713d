// The gateway's wiring (store, engine, catalog, fronts, upstreams, action tools, maintenance, shutdown), only.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { durationMs } from '../contracts/duration.js';
import type { ActionTool } from '../dispatch/channel.js';
import type { UpstreamSpec } from '../dispatch/mcp/index.js';
import type { ConfigError } from '../errors.js';
import type { Logger } from '../executions/call.js';
import type { ExecutionEngine } from '../executions/engine.js';
import { InFlight } from '../executions/in-flight.js';
import type { FrontAuth } from '../front/auth/index.js';
import type { Readiness } from '../front/health.js';
import { serveHttpFront } from '../front/http.js';
import type { ServedHttp } from '../front/http-options.js';
import { serveStdioFront } from '../front/stdio.js';
import { defaultActorOf } from '../identity/actor.js';
import { KnownSecrets } from '../identity/redaction.js';
import type { ActivityEventInput } from '../journal/events.js';
import { metricsObserver } from '../metrics/calls.js';
import { type IdemMetrics, loadMetrics } from '../metrics/metrics.js';
import { measuredStore } from '../metrics/store.js';
import type { ProtocolEra } from '../protocol/revisions.js';
import { logsDebug, TrafficLog, tapped } from '../protocol/traffic-log.js';
import type { ReceiptBook } from '../receipts/receipt-book.js';
import type { IdScope, ReceiptTransport } from '../receipts/receipt-transport.js';
import { Runtime } from '../runtime/index.js';
import type { ExecutionStore } from '../store/types.js';
import type { Log } from '../support/log.js';
import { checkedActionTools, closeActionTools } from './catalog/action-tools.js';
import { CautiousDefaultNotices, ToolCatalog } from './catalog/catalog.js';
import { declaredProbe } from './catalog/status-probe.js';
import { ToolNameGuard } from './catalog/tool-names.js';
import type { ToolOverrides } from './catalog/tool-overrides.js';
import { type GatewayConfig, NAME_SEPARATOR } from './config/config.js';
import { httpListenOf } from './config/http-listen.js';
import { frontAuthOf, receiptBookOptions, storeSpecOf } from './config/specs.js';
import { configWithImports } from './openapi/index.js';
import { closeShared, connectionsOf, readinessOf } from './readiness.js';
import { startPooledUpstreams } from './sessions/pooled-upstreams.js';
import {
  ProxySession,
  type SessionContext,
  type SharedUpstreams,
  startSharedUpstreams,
} from './sessions/session.js';
import { type Drained, drainGateway } from './shutdown.js';
import { logSkippedLine, logUpstreamLifecycle, logUpstreamRestart } from './upstreams/log.js';
import { UpstreamSpares } from './upstreams/spares.js';
import { upstreamSpecsOf } from './upstreams/specs.js';
import { taskFollowers } from './upstreams/task-followers.js';

export interface GatewayOptions {
  version: string;
  logger?: Logger;
  /** stderr of stdio upstreams (default: inherit, so an operator sees it). */
  upstreamStderr?: 'inherit' | 'ignore' | 'pipe';
  /** Now (ms): for HTTP sessions' idleness and OAuth tokens' lifetimes. Default: the system clock; tests inject one. */
  clock?: () => number;
  /**
   * The config names a tool that is not published, in a way that must stop the gateway (a scope, an approval;
   * any entry at an upstream's first listing): `idem gateway` exits. From then on it runs no tool, given or not.
   */
  onConfigFault?(error: ConfigError): void;
  /** Contracts from the command line (`--read-only`, `--tool`); they win over the config's `tools:`. */
  toolOverrides?: ToolOverrides;
}

/**
 * `idem gateway`: an MCP server in front of upstream MCP servers. Every side-effecting tools/call gets
 * receipts, an execution identity and a contract; everything else passes through.
 */
export class Gateway {
  readonly store: ExecutionStore;
  /** This gateway's Prometheus metrics (served by `metrics:`; see docs/metrics.md). */
  readonly metrics: IdemMetrics;
  readonly engine: ExecutionEngine;
  readonly receipts: ReceiptBook;
  readonly dataDir: string;
  /** HTTP (and SSH) tools declared in the config, performed by the gateway itself. */
  readonly actionTools: readonly ActionTool[];
  /** Taken once: walking process.env for each new session cost ~0.3 ms of every stateless POST. */
  readonly upstreams: UpstreamSpec[];
  readonly #config: GatewayConfig;
  readonly #options: GatewayOptions;
  /** The engine, store, receipts, known secrets and maintenance, assembled as for the library (src/runtime). */
  readonly #runtime: Runtime;
  /** Credential values to scrub from what the gateway writes (results, and its log of internal errors). */
  readonly #knownSecrets: KnownSecrets;
  /** The operator's log (options.logger), every line scrubbed of the configured credentials. */
  readonly #log: Log;
  readonly #sessions = new Set<ProxySession>();
  readonly #calls = new InFlight(); // each tools/call until answered: what a shutdown waits for (shutdown.ts)
  /** Who may call the HTTP front (auth.bearer, auth.oauth); undefined: anyone on loopback. */
  readonly #auth: FrontAuth | undefined;
  /** Tools listed with a read-only contract: the receipt layer leaves their calls alone. */
  readonly #readOnlyTools = new Set<string>();
  /** Names the tools on the cautious default, each once per process. */
  readonly #cautiousNotices = new CautiousDefaultNotices((message) => this.#log.warn(message));
  /** The config's tool names, checked whenever an upstream's tools are listed; a fault stops every tool. */
  readonly #toolNames: ToolNameGuard;
  #http: ServedHttp | undefined;
  /** `--log-level debug`: every message with a client or an upstream, one line each (protocol/traffic-log.ts). */
  readonly #traffic: TrafficLog | undefined;

  private constructor(
    config: GatewayConfig,
    options: GatewayOptions,
    runtime: Runtime,
    actionTools: ActionTool[],
    metrics: IdemMetrics,
  ) {
    this.#config = config;
    this.#options = options;
    this.#runtime = runtime;
    this.#knownSecrets = runtime.knownSecrets;
    this.#log = runtime.log;
    this.#traffic = logsDebug(options.logger)
      ? new TrafficLog(this.#log, () => this.#knownSecrets.values())
      : undefined;
    this.metrics = metrics;
    this.store = runtime.store;
    this.engine = runtime.engine;
    this.receipts = runtime.receipts;
    this.dataDir = runtime.dataDir;
    this.actionTools = actionTools;
    this.#toolNames = new ToolNameGuard(config, {
      warn: this.#tellOperator,
      fault: (error) => {
        options.logger?.error(error.message);
        options.onConfigFault?.(error);
      },
    });
    this.#toolNames.include(options.toolOverrides?.nameEntries() ?? []); // the command line's, by the same rule
    this.upstreams = upstreamSpecsOf(config, runtime.fingerprinter, this.#knownSecrets.values()); // identities, once
    this.#auth = frontAuthOf(config, options.clock);
  }

  static async start(declared: GatewayConfig, options: GatewayOptions): Promise<Gateway> {
    // OpenAPI operations become http_tools first: from there on they are hand-written ones.
    const config = await configWithImports(declared, options.logger);
    const knownSecrets = new KnownSecrets();
    const actionTools = await checkedActionTools(config, knownSecrets, options.logger);
    let gateway: Gateway | undefined;
    const metrics = await loadMetrics({
      required: config.metrics !== undefined,
      receiptsInUse: () => gateway?.receipts.size ?? 0,
      store: () => gateway?.store,
      processMetrics: config.metrics !== undefined || config.console !== undefined,
    });
    const runtime = await Runtime.open({
      dataDir: config.data_dir,
      store: (dataDir) => storeSpecOf(config, dataDir),
      // Every store operation is measured at one place, whoever calls it (engine, sweeper, sessions).
      measure: (store) => measuredStore(store, metrics),
      fingerprintKeyFile: config.fingerprint_key_file,
      journalSigningKeyFile: config.journal_signing_key_file,
      statusTool: config.status_tool,
      retention: config.retention,
      maintenanceIntervalMs: durationMs(config.sweep_interval, 'sweep_interval'),
      receipts: receiptBookOptions(config),
      knownSecrets,
      logger: options.logger,
      observer: metricsObserver(metrics),
      // Each maintenance pass first takes over the upstream tasks whose follower was lost.
      resume: async () => {
        if (gateway) await gateway.#resumeUpstreamTasks();
      },
    });
    gateway = new Gateway(config, options, runtime, actionTools, metrics);
    // A holder lost before this start may have left an upstream's task to follow (also every pass).
    const started = gateway;
    void started
      .#resumeUpstreamTasks()
      .catch((error: unknown) => started.#log.warn('upstream tasks not resumed', { error: String(error) }));
    return gateway;
  }

  /** Serves one client over stdio (this process's stdin/stdout, or the transport given). */
  serveStdio(transport?: Transport): Promise<ProxySession> {
    return serveStdioFront({
      ...(transport ? { transport } : {}),
      wrap: (t) => this.#wrap(t, 'connection'),
      attach: (t) => this.#attach(t),
    });
  }

  /** Serves clients over Streamable HTTP, as `listen.http` says (checked in http-listen.ts). */
  async serveHttp(): Promise<ServedHttp> {
    const logger = this.#options.logger ? this.#log : undefined;
    const listen = httpListenOf(this.#config, this.#auth !== undefined, logger);
    this.#http = await serveHttpFront({
      ...listen,
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
      ...(this.#auth ? { auth: this.#auth } : {}),
      readiness: () => this.readiness(),
      wrap: (transport) => this.#wrap(transport, listen.stateless ? 'none' : 'session'),
      attach: async (transport) =>
        this.#attach(transport, listen.stateless ? await this.#sharedUpstreams('legacy') : undefined),
      // 2026-07-28 requests have no session, in either mode: ids without session scope.
      modern: {
        wrap: (transport) => this.#wrap(transport, 'none'),
        attach: async (transport) => {
          await this.#attach(transport, await this.#sharedUpstreams('modern'));
        },
      },
    });
    // Each stateful session starts its own stdio upstreams: one process of each is kept started ahead.
    if (!listen.stateless)
      this.#spares ??= UpstreamSpares.of(this.#config, this.#sessionContext(), this.#tellOperator);
    return this.#http;
  }

  /** Ready: the store answers, and no upstream is down in any live session or shared set (readiness.ts). */
  async readiness(): Promise<Readiness> {
    const connections = await connectionsOf(this.#sessions, this.#shared.values());
    return readinessOf(this.store, connections, this.upstreams, this.#toolNames.fault);
  }

  /** Shutting down: no new calls, and those under way finished and recorded within `graceMs` (shutdown.ts). */
  drain(graceMs: number): Promise<Drained> {
    return drainGateway({ http: this.#http, engine: this.engine, calls: this.#calls }, graceMs);
  }

  async close(): Promise<void> {
    this.#runtime.stopMaintenance();
    // Followings of upstream tasks cut short by the closing connections are left for the next gateway.
    const resumed = this.engine.stopFollowing();
    await this.#http?.close();
    await Promise.all([...this.#sessions].map((s) => s.close()));
    await this.#spares?.close();
    await closeShared([...this.#shared.values(), ...(this.#pool ? [this.#pool] : [])]);
    await closeActionTools(this.actionTools);
    await resumed;
    await this.#runtime.close();
  }

  /** Follows again the upstream tasks whose holder was lost, over this gateway's shared connections. */
  async #resumeUpstreamTasks(): Promise<void> {
    const shared = (era: ProtocolEra) => this.#sharedUpstreams(era);
    const followers = taskFollowers(this.#config.upstreams, {
      shared,
      pooled: () => this.#pooledUpstreams(),
    });
    await this.engine.resumeUpstreamTasks(followers);
  }

  #wrap(transport: Transport, idScope: IdScope): ReceiptTransport {
    return this.#runtime.receiptTransport(tapped(transport, this.#traffic), {
      actorOf: defaultActorOf,
      idScope,
      // Reads pass straight through (docs/lifecycle.md, step 2): the status tool, and tools with a read-only contract.
      hasEffects: (tool) => tool !== this.#config.status_tool && !this.#readOnlyTools.has(tool),
      onAnswered: (how) => this.metrics.receiptAnswers.inc({ answer: how }),
    });
  }

  /** What an operator must not miss: the log (scrubbed), or stderr without one. */
  readonly #tellOperator = (message: string, fields?: Record<string, unknown>): void => {
    if (this.#options.logger) this.#log.warn(message, fields);
    else process.stderr.write(`idem gateway: ${message}\n`);
  };

  /** An agent run's event (its start and end, an upstream restarted under it): the sessions journal, scrubbed. */
  #journalSession(event: ActivityEventInput): void {
    this.#runtime.journalSession(event);
  }

  /**
   * Stateless fronts and 2026-07-28 clients share one set of upstream connections per revision family,
   * opened on first use: a 2026-07-28 client's set speaks that revision to every upstream that does, so
   * what only it can say passes through unchanged.
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

  /** A process of each stdio upstream started ahead of the next stateful HTTP session (upstream-spares.ts). */
  #spares: UpstreamSpares | undefined;

  /** The connections to the upstreams configured `share: true`, opened when a session first needs them. */
  #pool: Promise<SharedUpstreams> | undefined;
  #pooledUpstreams(): Promise<SharedUpstreams> {
    this.#pool ??= startPooledUpstreams(this.#sessionContext()).catch((error: unknown) => {
      this.#pool = undefined;
      throw error;
    });
    return this.#pool;
  }

  async #attach(transport: Transport, shared?: SharedUpstreams): Promise<ProxySession> {
    const session = new ProxySession({ ...this.#sessionContext(), ...(shared ? { shared } : {}) }, transport);
    this.#sessions.add(session);
    const closed = transport.onclose;
    transport.onclose = () => {
      closed?.();
      // Kept until its upstreams are closed (up to 4 s for one that outlives its stdin): a closing gateway waits.
      void session.close().finally(() => this.#sessions.delete(session));
    };
    await session.start();
    return session;
  }

  #sessionContext(): SessionContext {
    const upstreams = this.upstreams;
    return {
      engine: this.engine,
      calls: this.#calls,
      upstreams,
      ...(this.#traffic ? { traffic: this.#traffic } : {}),
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
      spareFor: (spec) => this.#spares?.take(spec),
      onRequestFailed: (method, error) =>
        // The configured credentials are scrubbed from it (#log), as from every result.
        this.#log.error('a request failed inside the gateway; it was answered with an internal error', {
          method,
          error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        }),
      onUpstreamRestart: ({ upstream, attempt, delayMs, reason, session, actor }) => {
        this.metrics.upstreamRestarts.inc({ upstream });
        // A restarted upstream has lost whatever state it held: say so where a user looks, and keep it.
        logUpstreamRestart(this.#log, { upstream, session }, { attempt, delayMs, reason });
        this.#journalSession({
          kind: 'upstream_restart',
          actor,
          requestRef: session,
          detail: { upstream, attempt, delay_ms: delayMs, reason },
        });
      },
      onUpstreamLifecycle: (upstream, session, event) =>
        logUpstreamLifecycle(this.#log, { upstream, session }, event),
      onInitializeRefused: (session, reason) =>
        this.#log.error(`initialize refused: ${reason}; the client may try again`, { session }),
      onUpstreamSkippedLine: (upstream, session, skipped) =>
        logSkippedLine(this.#log, (text) => this.#knownSecrets.redact(text), { upstream, session }, skipped),
      ...(this.#options.upstreamStderr ? { upstreamStderr: this.#options.upstreamStderr } : {}),
      secrets: this.#knownSecrets,
      newCatalog: () =>
        new ToolCatalog({
          contracts: this.#config.tools ?? {},
          overrides: this.#options.toolOverrides,
          prefixed: upstreams.length > 1,
          separator: NAME_SEPARATOR,
          probeFor: (_name, probe) => declaredProbe(this.#sessions, probe),
          defaults: this.#config.defaults,
          actionTools: this.actionTools,
          statusTool: this.#config.status_tool,
          onAdd: (entries) => {
            // The same for every session; the engine reads them for what answers without a call (a task's approval).
            for (const entry of entries) {
              this.engine.registerContract(entry.name, entry.contract);
              if (entry.contract.replay === 'read_only') this.#readOnlyTools.add(entry.name);
              else this.#readOnlyTools.delete(entry.name);
            }
            this.#cautiousNotices.listed(entries);
          },
          onListed: (upstream, catalog) => this.#toolNames.listed(upstream, catalog),
        }),
    };
  }
}
