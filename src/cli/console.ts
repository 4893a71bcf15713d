import type { Command } from 'commander';
import { loadOperatorToken } from '../console/auth.js';
import { isLoopbackHost, loadConfig, splitHostPort } from '../gateway/config/index.js';
import { verifyFromFlags } from './audit.js';
import { locateStore, openLocatedStore, type StoreFlags, storeOptions } from './store-access.js';

interface ConsoleFlags extends StoreFlags {
  listen?: string;
  tokenFile?: string;
  tokenEnv?: string;
}

/**
 * `idem console`: the operator console in the browser, over the store the
 * gateways use (SQLite or PostgreSQL), live while they run. The same store
 * location rules as the other operator commands; the `console:` section of
 * `--config` gives the defaults of --listen and the token.
 */
export function registerConsoleCommand(program: Command): void {
  storeOptions(program.command('console'))
    .description(
      "Serve the operator console (executions, approvals, sessions, journal, activity) over the store; needs an operator token (IDEM_CONSOLE_TOKEN or --token-file). --config's console: section gives the defaults of --listen and the token",
    )
    .option('-l, --listen <host:port>', 'where to listen (default: console.listen, else 127.0.0.1:8788)')
    .option('--token-file <file>', 'the operator token in a file (mode 0600)')
    .option('--token-env <name>', 'the environment variable holding the token (default IDEM_CONSOLE_TOKEN)')
    .action(async (flags: ConsoleFlags) => {
      const section = flags.config ? loadConfig(flags.config).console : undefined;
      const tokenFile = flags.tokenFile ?? section?.token_file;
      const tokenEnv = flags.tokenEnv ?? section?.token_env;
      const token = await loadOperatorToken({
        ...(tokenFile ? { file: tokenFile } : {}),
        ...(tokenEnv ? { env: tokenEnv } : {}),
      });
      const { host, port } = splitHostPort(flags.listen ?? section?.listen ?? '127.0.0.1:8788');
      const store = await openLocatedStore(locateStore(flags));
      // Its own metrics: the store as the console uses it (latency, errors, the decisions made here,
      // what waits on an operator); calls are the gateways'.
      // Loaded on use, with what they load (prom-client, OpenTelemetry) when installed.
      const [{ loadMetrics }, { measuredStore }] = await Promise.all([
        import('../metrics/metrics.js'),
        import('../metrics/store.js'),
      ]);
      // Scrapes (which come once the console listens) read the store as measured, declared next.
      const metrics = await loadMetrics({ store: () => measured, processMetrics: true });
      const measured = measuredStore(store, metrics);
      // Loaded on use: the web app (Hono, pages) is not needed by the other commands.
      const { startConsole } = await import('../console/server.js');
      const running = await startConsole({
        store: measured,
        ...(metrics.registry ? { metrics: metrics.registry } : {}),
        token,
        host,
        port,
        ...(section?.allowed_hosts ? { allowedHosts: section.allowed_hosts } : {}),
        verifyJournal: async () => (await verifyFromFlags({ ...flags, json: true })).report,
      }).catch(async (error: unknown) => {
        await store.close();
        throw error;
      });
      process.stderr.write(`idem console: on ${running.url}\n`);
      const warning = plainHttpWarning(host);
      if (warning) process.stderr.write(`idem console: ${warning}\n`);
      const stop = async () => {
        await running.close().catch(() => {});
        await store.close().catch(() => {});
        process.exit(0);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}

/**
 * Said at start when the console (`idem console`, or a gateway's `console:`)
 * listens where other machines can reach it: it speaks plain HTTP, so the
 * operator token typed at login and the session cookie cross the network in
 * clear. Undefined on loopback.
 */
export function plainHttpWarning(host: string): string | undefined {
  if (isLoopbackHost(host)) return undefined;
  return (
    `WARNING: the console listens on ${host}, which other machines can reach, and speaks plain HTTP: ` +
    'the operator token (at login, or as a bearer at /metrics) and the session cookie cross the network in clear. ' +
    'Listen on 127.0.0.1 and put a TLS proxy in front (with console.allowed_hosts). See docs/console.md.'
  );
}
