import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { IDEM_CLI, idemCommand } from './idem-cli.js';
import { REPO_ROOT } from './node22.js';

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * `idem gateway --config <file> --listen 127.0.0.1:0` as its own process (the
 * CLI, as an operator runs it); resolves with the URL it prints.
 */
export async function startGatewayProcess(
  config: unknown,
  configPath: string,
  options: { env?: Record<string, string>; preload?: string[]; cli?: string } = {},
): Promise<GatewayProcess> {
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return startGatewayCli(['--config', configPath, '--listen', '127.0.0.1:0'], options);
}

/**
 * `idem gateway <args…>` as its own process (the args must make it listen on
 * HTTP, e.g. `--listen 127.0.0.1:0`, and may end with `-- <server command>`);
 * resolves with the URL it prints.
 */
export async function startGatewayCli(
  gatewayArgs: string[],
  /** `cli`: another build of `idem` (a script comparing with an earlier one); default this checkout's dist/. */
  options: { env?: Record<string, string>; preload?: string[]; cli?: string } = {},
): Promise<GatewayProcess> {
  const args = [
    ...(options.preload ?? []).flatMap((p) => ['--import', p]),
    options.cli ?? IDEM_CLI,
    'gateway',
    ...gatewayArgs,
  ];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${stderr}`)), 60_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /Streamable HTTP on (http:\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${stderr}`));
    });
  });
  return {
    url,
    child,
    stderr: () => stderr,
    kill: (signal = 'SIGTERM') => stopChild(child, signal),
  };
}

export async function mcpClient(url: string, name = 'pg-test-agent'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Sends `signal` to a process still running and waits for its exit; one already gone is left alone. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await exited;
}

/**
 * `idem <args…>` over stdio, as a desktop client runs it: an SDK client connected to it, what it
 * wrote on stderr so far, and its transport (its pid). `env` is given to it as it is.
 */
export async function stdioIdemClient(
  args: string[],
  options: { name: string; env: Record<string, string> },
): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const cli = idemCommand(args);
  const transport = new StdioClientTransport({
    command: cli.command,
    args: cli.args,
    cwd: cli.cwd,
    env: options.env,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: options.name, version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}
