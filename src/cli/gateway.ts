import type { Command } from 'commander';
import { loadOperatorToken } from '../console/auth.js';
import { durationMs } from '../contracts/duration.js';
import { ConfigError } from '../errors.js';
import { ToolOverrides } from '../gateway/catalog/index.js';
import { type GatewayConfig, splitHostPort } from '../gateway/config/index.js';
import type { Gateway } from '../gateway/gateway.js';
import { unstartableReason } from '../gateway/upstreams/command-check.js';
import { serveMetrics } from '../metrics/serve.js';
import {
  createLog,
  LOG_FORMATS,
  LOG_LEVELS,
  type Log,
  type LogFormat,
  type LogLevel,
} from '../support/log.js';
import { verifyFromFlags } from './audit.js';
import { plainHttpWarning } from './console.js';
import { API_KEY_ACTOR, buildConfig, type GatewayFlags } from './gateway-config.js';
import { stopGracefully } from './gateway-shutdown.js';

/** `idem gateway [--config idem.yaml] [--listen host:port] [-- command args…]` */
export function registerGatewayCommand(program: Command, version: string): void {
  program
    .command('gateway')
    .description(
      'Run the MCP gateway. Zero config: `idem gateway -- <command> [args…]` wraps one stdio MCP server and serves it on stdio. A flag that names a config key (in parentheses) sets that key, checked as the key is, and wins over the file; only --api-key and --api-key-env are refused beside a config with auth:.',
    )
    .option(
      '-c, --config <file>',
      'YAML config: upstreams, fronts, store, contracts, tokens (schema: schema/idem-config.schema.json)',
    )
    .option(
      '--read-only <globs>',
      "tools that only read, as comma-separated globs (e.g. 'get_*,list_*,search_*'): run every time, never replayed; repeatable; wins over the config",
      collect,
      [],
    )
    .option(
      '--tool <name=replay>',
      "a tool's replay contract: NAME=read_only|review|keyed|status (NAME may be a glob); repeatable; wins over --read-only and the config",
      collect,
      [],
    )
    .option('-l, --listen <host:port>', 'serve Streamable HTTP on this address (listen.http.host and port)')
    .option('-p, --port <port>', 'serve Streamable HTTP on 127.0.0.1:<port> (--listen 127.0.0.1:<port>)')
    .option('--path <path>', 'the MCP endpoint of the HTTP front (listen.http.path; default /mcp)')
    .option('--stateless', 'serve HTTP without sessions: every POST stands alone (listen.http.stateless)')
    .option(
      '--sse',
      'also serve clients of the older HTTP+SSE transport: GET /sse, POST /messages (listen.http.sse)',
    )
    .option(
      '--cors <origins>',
      'browser origins allowed to call the HTTP front, with CORS, as comma-separated scheme://host[:port] (listen.http.allowed_origins; no "*"); repeatable',
      collect,
    )
    .option(
      '--api-key-env <name>',
      `require "Authorization: Bearer <key>" on the HTTP front, the key read from this environment variable (auth.bearer token_env; actor ${API_KEY_ACTOR})`,
    )
    .option(
      '--api-key <key>',
      'the same with the key itself; prefer --api-key-env: a key on the command line shows in ps and in shell history',
    )
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate chain (listen.http.tls.cert_file)')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert (listen.http.tls.key_file)')
    .option(
      '-H, --header <name: value>',
      `a header sent to the HTTP upstream given after -- (repeatable); '\${NAME}' is taken from the environment, keeping a secret out of the command line`,
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--stdio', 'also serve on stdio when --listen, --port or the config enables HTTP')
    .option(
      '--allow-unauthenticated',
      'serve HTTP without auth on a non-loopback address (listen.http.allow_unauthenticated); see docs/security.md in the idem package',
    )
    .argument(
      '[command...]',
      'after --: an upstream MCP server command, or the URL of an HTTP MCP server (http:// or https://; Streamable HTTP, or the /sse of an HTTP+SSE server, found out when it refuses the POST)',
    )
    .option(
      '--log-level <level>',
      `least severe level on stderr: ${LOG_LEVELS.join('|')} (log_level; default info)`,
    )
    .option('--log-format <format>', `stderr lines as ${LOG_FORMATS.join('|')} (log_format; default text)`)
    .passThroughOptions()
    .action(async (command: string[], flags: GatewayFlags) => {
      // A rejection nobody observed is a bug; it must cost at most the call it belonged to, never
      // every session on this process (Node's default ends the process). Loud, so tests catch it.
      process.on('unhandledRejection', (reason) => {
        const text = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
        process.stderr.write(`idem gateway: unhandled rejection (a bug, please report it): ${text}\n`);
      });
      const config = buildConfig(command, flags);
      const { log, announce } = logFor(config, flags);
      const toolOverrides = ToolOverrides.parse(flags.readOnly ?? [], flags.tool ?? [], config.tools);
      // Loaded here, not at the top: every other command starts without the gateway's module graph.
      const { Gateway } = await import('../gateway/gateway.js');
      let stop = async (_code: number) => {};
      const gateway = await Gateway.start(config, {
        version,
        // The config or a flag names a tool nobody publishes (the logger has said which); no tool runs from now on.
        // Over stdio its one client was told in the answer that found it: the gateway exits. An HTTP front stays
        // up and answers every client the same error at once, /readyz not ready, rather than die on its first one.
        onConfigFault: () => {
          if (!config.listen?.http) {
            void stop(2);
            return;
          }
          log.error(
            'the HTTP front stays up, answering every client with this error and /readyz not ready: fix the config or the flags and restart the gateway',
          );
        },
        toolOverrides,
        logger: log,
      });
      // Said at start, not at the first client: a command that is not there will not be there then either.
      for (const spec of gateway.upstreams) {
        const why = unstartableReason(spec);
        if (why)
          log.error(
            `upstream ${spec.name} cannot be started: ${why}; clients get an error for it, and /readyz says not ready, until it can be`,
          );
      }
      let closeOperatorListeners = async () => {};
      stop = async (code: number) => {
        await closeOperatorListeners();
        await gateway.close().catch(() => {});
        process.exit(code);
      };
      const { shutdown } = stopGracefully({
        drain: (graceMs) => gateway.drain(graceMs),
        stop: (code) => stop(code),
        graceMs: durationMs(config.shutdown_grace, 'shutdown_grace'),
        log,
        announce,
      });
      if (config.listen?.http) {
        const http = await gateway.serveHttp().catch(async (error: unknown) => {
          // Refused (or could not listen): the store goes closed, not half-open.
          await gateway.close().catch(() => {});
          throw error;
        });
        announce(`Streamable HTTP on ${http.url}`);
        if (config.listen.http.sse) announce(`HTTP+SSE on ${new URL('sse', http.url).href} (and /messages)`);
      }
      closeOperatorListeners = await serveOperatorListeners(gateway, config, flags, announce);
      if (config.listen?.stdio ?? !config.listen?.http) {
        await gateway.serveStdio();
        // stdio serves one client: when it goes (stdin ends, or stdout is closed), so does the
        // gateway — after the calls under way are finished and recorded, as on SIGTERM.
        process.stdin.once('end', () => shutdown('the client closed stdin'));
        process.stdout.removeAllListeners('error');
        process.stdout.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code !== 'EPIPE') throw error;
          shutdown('the client closed stdout');
        });
      }
    });
}

/**
 * The operator's log on stderr: --log-level / --log-format, else the config's log_level / log_format.
 * `announce` writes what is said at start whatever the level (where the gateway listens), in the same format.
 */
function logFor(
  config: GatewayConfig,
  flags: GatewayFlags,
): { log: Log; announce: (message: string) => void } {
  const level = flags.logLevel ?? config.log_level;
  const format = flags.logFormat ?? config.log_format;
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new ConfigError(`--log-level ${level}: expected one of ${LOG_LEVELS.join(', ')}`);
  if (!(LOG_FORMATS as readonly string[]).includes(format))
    throw new ConfigError(`--log-format ${format}: expected one of ${LOG_FORMATS.join(', ')}`);
  const options = { format: format as LogFormat, name: 'idem gateway' };
  const always = createLog({ ...options, level: 'debug' });
  return {
    log: createLog({ ...options, level: level as LogLevel }),
    announce: (message) => always.info(message),
  };
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * The `metrics:` and `console:` sections: each on its own listener, closed
 * with the gateway. The console shares the gateway's store (one pool) and
 * serves its metrics too; its token is checked before anything listens.
 */
async function serveOperatorListeners(
  gateway: Gateway,
  config: GatewayConfig,
  flags: GatewayFlags,
  announce: (message: string) => void,
): Promise<() => Promise<void>> {
  const closers: (() => Promise<void>)[] = [];
  try {
    if (config.metrics) {
      const { host, port } = splitHostPort(config.metrics.listen);
      // Gateway.start required prom-client for a `metrics:` section: the registry is there.
      const served = await serveMetrics(gateway.metrics.registry!, host, port);
      closers.push(served.close);
      announce(`metrics on ${served.url}`);
    }
    if (config.console) {
      const section = config.console;
      const token = await loadOperatorToken({
        ...(section.token_file ? { file: section.token_file } : {}),
        ...(section.token_env ? { env: section.token_env } : {}),
      });
      const { host, port } = splitHostPort(section.listen);
      // Loaded on use: the web app (Hono, pages) is not needed by the other commands.
      const { startConsole } = await import('../console/server.js');
      const running = await startConsole({
        store: gateway.store,
        token,
        host,
        port,
        ...(gateway.metrics.registry ? { metrics: gateway.metrics.registry } : {}),
        ...(section.allowed_hosts ? { allowedHosts: section.allowed_hosts } : {}),
        verifyJournal: async () => (await verifyFromFlags({ config: flags.config, json: true })).report,
      });
      closers.push(running.close);
      announce(`console on ${running.url}`);
      const warning = plainHttpWarning(host);
      if (warning) announce(warning);
    }
  } catch (error) {
    for (const close of closers) await close().catch(() => {});
    await gateway.close().catch(() => {});
    throw error;
  }
  return async () => {
    for (const close of closers) await close().catch(() => {});
  };
}
