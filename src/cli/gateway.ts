import type { Command } from 'commander';
import { loadOperatorToken } from '../console/auth.js';
import { ConfigError, type GatewayConfig, loadConfig } from '../gateway/config.js';
import { splitHostPort } from '../gateway/config-operator.js';
import type { Gateway } from '../gateway/gateway.js';
import { ToolOverrides } from '../gateway/tool-overrides.js';
import { serveMetrics } from '../metrics/serve.js';
import { packageDoc } from '../support/package-docs.js';
import { verifyFromFlags } from './audit.js';
import { withCommandUpstream } from './command-upstream.js';
import { plainHttpWarning } from './console.js';

interface GatewayFlags {
  config?: string;
  readOnly: string[];
  tool: string[];
  listen?: string;
  stdio?: boolean;
  allowUnauthenticated?: boolean;
}

/** `idem gateway [--config idem.yaml] [--listen host:port] [-- command args…]` */
export function registerGatewayCommand(program: Command, version: string): void {
  program
    .command('gateway')
    .description(
      'Run the MCP gateway. Zero config: `idem gateway -- <command> [args…]` wraps one stdio MCP server and serves it on stdio.',
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
    .option('-l, --listen <host:port>', 'serve Streamable HTTP on this address (path /mcp)')
    .option('--stdio', 'also serve on stdio when --listen or the config enables HTTP')
    .option(
      '--allow-unauthenticated',
      `serve HTTP without auth on a non-loopback address (listen.http.allow_unauthenticated); see ${packageDoc('security.md')}`,
    )
    .argument('[command...]', 'an upstream MCP server command, after --')
    .passThroughOptions()
    .action(async (command: string[], flags: GatewayFlags) => {
      // A rejection nobody observed is a bug; it must cost at most the call it belonged to, never
      // every session on this process (Node's default ends the process). Loud, so tests catch it.
      process.on('unhandledRejection', (reason) => {
        const text = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
        process.stderr.write(`idem gateway: unhandled rejection (a bug, please report it): ${text}\n`);
      });
      const config = buildConfig(command, flags);
      const toolOverrides = ToolOverrides.parse(flags.readOnly, flags.tool, config.tools);
      // Loaded here, not at the top: every other command starts without the gateway's module graph.
      const { Gateway } = await import('../gateway/gateway.js');
      const gateway = await Gateway.start(config, {
        version,
        toolOverrides,
        logger: {
          warn: (message, fields) =>
            process.stderr.write(`idem gateway: ${message} ${fields ? JSON.stringify(fields) : ''}\n`),
          error: (message, fields) =>
            process.stderr.write(`idem gateway: ${message} ${fields ? JSON.stringify(fields) : ''}\n`),
        },
      });
      let closeOperatorListeners = async () => {};
      const stop = async () => {
        await closeOperatorListeners();
        await gateway.close().catch(() => {});
        process.exit(0);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      if (config.listen?.http) {
        const http = await gateway.serveHttp().catch(async (error: unknown) => {
          // Refused (or could not listen): the store goes closed, not half-open.
          await gateway.close().catch(() => {});
          throw error;
        });
        process.stderr.write(`idem gateway: Streamable HTTP on ${http.url}\n`);
      }
      closeOperatorListeners = await serveOperatorListeners(gateway, config, flags);
      if (config.listen?.stdio ?? !config.listen?.http) {
        const session = await gateway.serveStdio();
        // stdio serves one client: when it goes, so does the gateway.
        process.stdin.once('end', () => void session.close().then(stop));
      }
    });
}

function buildConfig(command: string[], flags: GatewayFlags): GatewayConfig {
  let config: GatewayConfig;
  if (flags.config) {
    config = loadConfig(flags.config);
    // The command after -- joins the config's upstreams: tune a zero-config server with a file.
    if (command.length > 0) config = withCommandUpstream(config, command);
  } else {
    if (command.length === 0)
      throw new ConfigError(
        'nothing to serve: give --config idem.yaml, or a command after -- (idem gateway -- npx some-mcp-server)',
      );
    config = withCommandUpstream(undefined, command);
  }
  if (flags.listen) {
    const match = /^(.*):(\d+)$/.exec(flags.listen);
    if (!match) throw new ConfigError(`--listen ${flags.listen}: expected host:port, e.g. 127.0.0.1:8787`);
    const host = (match[1] as string).replace(/^\[|\]$/g, '');
    config.listen = {
      ...config.listen,
      stdio: flags.stdio ?? config.listen?.stdio ?? false,
      http: {
        path: '/mcp',
        stateless: false,
        session_idle_timeout: '30m',
        allow_unauthenticated: false,
        ...config.listen?.http,
        host,
        port: Number(match[2]),
      },
    };
  }
  if (flags.allowUnauthenticated && config.listen?.http) config.listen.http.allow_unauthenticated = true;
  return config;
}

function collect(value: string, previous: string[]): string[] {
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
): Promise<() => Promise<void>> {
  const closers: (() => Promise<void>)[] = [];
  try {
    if (config.metrics) {
      const { host, port } = splitHostPort(config.metrics.listen);
      const served = await serveMetrics(gateway.metrics.registry, host, port);
      closers.push(served.close);
      process.stderr.write(`idem gateway: metrics on ${served.url}\n`);
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
        metrics: gateway.metrics.registry,
        ...(section.allowed_hosts ? { allowedHosts: section.allowed_hosts } : {}),
        verifyJournal: async () => (await verifyFromFlags({ config: flags.config, json: true })).report,
      });
      closers.push(running.close);
      process.stderr.write(`idem gateway: console on ${running.url}\n`);
      const warning = plainHttpWarning(host);
      if (warning) process.stderr.write(`idem gateway: ${warning}\n`);
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
