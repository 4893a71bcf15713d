/**
 * The gateway under test: in process on loopback HTTP with a fresh data
 * directory, or `idem gateway …` spawned as the CLI. No mocks: every request
 * goes through real sockets and real processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ServedHttp } from '../../src/front/http-options.js';
import { type GatewayConfig, GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway, type GatewayOptions } from '../../src/gateway/gateway.js';
import { idemCommand } from './idem-cli.js';
import { freshDir } from './temp-dirs.js';

export interface RunningGateway {
  gateway: Gateway;
  /** The HTTP front itself (its idle sweep, for tests that move the clock). */
  served: ServedHttp;
  url: string;
  dataDir: string;
  close(): Promise<void>;
}

/** An in-process gateway on a free loopback port, with a fresh data directory. */
export async function startHttpGateway(
  config: Omit<Partial<GatewayConfig>, 'listen'> & {
    upstreams: GatewayConfig['upstreams'];
    http?: Record<string, unknown>;
  },
  /** What the gateway is started with besides the config (a logger, to read what it logs). */
  options: Partial<GatewayOptions> = {},
): Promise<RunningGateway> {
  const dataDir = freshDir('gw-data');
  const { http, ...rest } = config;
  const gateway = await Gateway.start(
    GatewayConfigSchema.parse({
      data_dir: dataDir,
      ...rest,
      listen: { http: { host: '127.0.0.1', port: 0, ...http } },
    }),
    { version: 'test', upstreamStderr: 'ignore', ...options },
  );
  const served = await gateway.serveHttp();
  return { gateway, served, url: served.url, dataDir, close: () => gateway.close() };
}

/** Resident set size of a process in bytes (Linux /proc). */
export async function rssOf(pid: number): Promise<number> {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

export function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Spawns `idem gateway …` with IDEM_DATA_DIR; stdio pipes are the caller's. */
export function spawnGateway(args: string[], env: Record<string, string>): ChildProcess {
  const cli = idemCommand(['gateway', ...args]);
  return spawn(cli.command, cli.args, {
    cwd: cli.cwd,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
