/**
 * What the probe runs against. Gateway mode: the probe's counting upstream
 * (stdio or Streamable HTTP) with the gateway under test in front, started by
 * the `--via` command; the probe controls the upstream (a slow call, a held
 * call it can kill) and counts at its side. Server mode: the author's server
 * (a command or a URL), its tool called with the author's arguments, its
 * effects counted by the author's `--count` command.
 */
import { type ChildProcess, exec, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, type Endpoint } from './agent.js';
import { countingUpstreamCommand, PROBE_TOOL, releaseFile } from './counting-upstream.js';
import { alive, effectsOf, readEffects, underWay } from './effects.js';

type Args = Record<string, unknown>;

/** How long the probe waits for a process to start or for work to settle: a cap for a hung run, not a guess. */
export const STARTUP_CAP_MS = 30_000;

export interface ProbeTarget {
  mode: 'gateway' | 'server';
  /** What is probed, as the scorecard names it. */
  label: string;
  tool: string;
  /** The arguments of action `key`; `control` (gateway mode) makes the call slow or held. */
  argsFor(key: string, control?: { delay_ms?: number; hold?: boolean }): Args;
  /** Where an agent session connects now (a new one after a restart). */
  endpoint(): Endpoint;
  /** How many times action `key` took effect at the far side. */
  count(key: string): Promise<number>;
  /** Waits until no call is under way at the far side (gateway mode; server mode cannot see it). */
  settle(): Promise<void>;
  /** Gateway mode: the far side's own controls. */
  controls?: GatewayControls;
  close(): Promise<void>;
}

export interface GatewayControls {
  /** Resolves once action `key` has started at the far side (rejects once `signal` aborts). */
  started(key: string, signal?: AbortSignal): Promise<void>;
  /** Lets a held call of `key` answer (and any later one at once). */
  release(key: string): void;
  /** Kills the upstream process running `key` (SIGKILL); an HTTP upstream is started again by the probe. */
  killUpstream(key: string): Promise<void>;
  /** Kills the gateway under test (its whole process group, SIGKILL) and starts it again; HTTP front only. */
  restartGateway?(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export async function waitUntil(
  what: string,
  probe: () => boolean | Promise<boolean>,
  capMs = STARTUP_CAP_MS,
) {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > capMs) throw new Error(`gave up after ${capMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Quotes a shell word only when it needs it. */
export const shellWord = (value: string) =>
  /^[\w/.:=@%+,-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;

async function listening(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** Stops a process group started `detached`, and waits until none of its processes is left. */
async function stopGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const groupAlive = () => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!groupAlive()) return;
  try {
    process.kill(-pid, signal);
  } catch {
    child.kill(signal);
  }
  // The shell that leads the group exits at once; the gateway it started may still be draining.
  await waitUntil(`process group ${pid} to end`, () => !groupAlive());
}

// --- gateway mode ---

export interface GatewayTargetOptions {
  /** The gateway's command: {upstream} (the HTTP upstream's URL), {upstream_stdio} (its command), {port}. */
  via: string;
  /** Where the via command's stderr goes (default: ignored). */
  stderr?: (chunk: string) => void;
}

export async function openGatewayTarget(options: GatewayTargetOptions): Promise<ProbeTarget> {
  const { via } = options;
  if (!via.includes('{upstream}') && !via.includes('{upstream_stdio}'))
    throw new Error(
      '--via must name the upstream: {upstream} (its Streamable HTTP URL) or {upstream_stdio} (its command)',
    );
  const root = mkdtempSync(join(tmpdir(), 'idem-probe-'));
  const dir = join(root, 'upstream');
  const dataDir = join(root, 'idem-data');
  for (const d of [dir, dataDir]) mkdirSync(d);
  const env = childEnv({ IDEM_DATA_DIR: dataDir });
  const children: ChildProcess[] = [];

  let upstreamUrl: string | undefined;
  let httpUpstream: ChildProcess | undefined;
  let httpPort: number | undefined;
  const startHttpUpstream = async () => {
    httpPort ??= await freePort();
    const { command, args } = countingUpstreamCommand(dir, httpPort);
    // A group of its own, as the gateway's: stopGroup waits until it is gone (its port free again).
    const child = spawn(command, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let said = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      said += chunk.toString();
    });
    await waitUntil('the counting upstream', () => {
      if (child.exitCode !== null) throw new Error(`the counting upstream exited:\n${said}`);
      return said.includes('counting upstream on');
    });
    httpUpstream = child;
    upstreamUrl = `http://127.0.0.1:${httpPort}/mcp`;
  };
  try {
    if (via.includes('{upstream}')) await startHttpUpstream();
    const stdio = countingUpstreamCommand(dir);
    const port = via.includes('{port}') ? await freePort() : undefined;
    const command = via
      .replaceAll('{upstream_stdio}', [stdio.command, ...stdio.args].map(shellWord).join(' '))
      .replaceAll('{upstream}', upstreamUrl ? shellWord(upstreamUrl) : '')
      .replaceAll('{port}', String(port));

    let gateway: ChildProcess | undefined;
    const startGateway = async () => {
      const child = spawn(command, { shell: true, detached: true, env, stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(child);
      let said = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        options.stderr?.(chunk.toString());
      });
      await waitUntil(`the gateway under test (${command})`, async () => {
        if (child.exitCode !== null) throw new Error(`the gateway under test exited:\n${said}`);
        return listening(`http://127.0.0.1:${port}/mcp`);
      });
      gateway = child;
    };
    if (port !== undefined) await startGateway();

    const controls: GatewayControls = {
      started: (key, signal) =>
        waitUntil(`${key} to start at the upstream`, () => {
          signal?.throwIfAborted();
          return effectsOf(dir, key) > 0;
        }),
      release: (key) => writeFileSync(releaseFile(dir, key), ''),
      async killUpstream(key) {
        const line = readEffects(dir).find((l) => l.key === key && l.event === 'start');
        if (!line) throw new Error(`${key} never started`);
        if (httpUpstream && line.pid === httpUpstream.pid) {
          await stopGroup(httpUpstream, 'SIGKILL');
          await startHttpUpstream();
          return;
        }
        process.kill(line.pid, 'SIGKILL');
        await waitUntil(`the upstream (pid ${line.pid}) to die`, () => !alive(line.pid));
      },
      ...(port === undefined
        ? {}
        : {
            async restartGateway() {
              if (gateway) await stopGroup(gateway, 'SIGKILL');
              await startGateway();
            },
          }),
    };
    return {
      mode: 'gateway',
      label: via,
      tool: PROBE_TOOL,
      argsFor: (key, control = {}) => ({ key, ...control }),
      endpoint: () =>
        port === undefined
          ? { command: '/bin/sh', args: ['-c', `exec ${command}`], env }
          : { url: `http://127.0.0.1:${port}/mcp` },
      count: async (key) => effectsOf(dir, key),
      settle: () => waitUntil('the calls under way at the upstream to end', () => underWay(dir).length === 0),
      controls,
      async close() {
        for (const child of children.reverse()) await stopGroup(child);
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const child of children.reverse()) await stopGroup(child);
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

// --- server mode ---

export interface ServerTargetOptions {
  /** The server: a Streamable HTTP URL, or a command (words) the probe starts for each session. */
  server: { url: string } | { command: string; args: string[] };
  tool: string;
  /** The tool's arguments as JSON text, `{key}` where the action's name goes. */
  args: string;
  /** A shell command printing how many times action `{key}` took effect. */
  count: string;
}

export function openServerTarget(options: ServerTargetOptions): ProbeTarget {
  if (!options.args.includes('{key}'))
    throw new Error('--args must contain {key}: each scenario calls the tool with its own action name there');
  if (!options.count.includes('{key}'))
    throw new Error('--count must contain {key}: it counts the effects of one action');
  JSON.parse(options.args.replaceAll('{key}', 'k'));
  const label =
    'url' in options.server ? options.server.url : [options.server.command, ...options.server.args].join(' ');
  return {
    mode: 'server',
    label,
    tool: options.tool,
    argsFor: (key) => JSON.parse(options.args.replaceAll('{key}', key)) as Args,
    endpoint: () => ('url' in options.server ? options.server : { ...options.server, env: childEnv() }),
    count: (key) => runCount(options.count.replaceAll('{key}', key)),
    settle: async () => {},
    close: async () => {},
  };
}

/** Runs the author's count command; its output's last whole number is the count (grep -c exits 1 on 0). */
function runCount(command: string): Promise<number> {
  return new Promise((resolve, reject) => {
    exec(command, { timeout: STARTUP_CAP_MS }, (error, stdout, stderr) => {
      const numbers = stdout.match(/\d+/g);
      const last = numbers?.[numbers.length - 1];
      if (last !== undefined) resolve(Number(last));
      else
        reject(new Error(`--count printed no number (${command}): ${error?.message ?? ''} ${stderr}`.trim()));
    });
  });
}
