/**
 * What the gateway and fleet benchmarks share: server processes started and
 * stopped by their own process group, an MCP client per session, a load
 * driver with a fixed number of calls in flight, and latency statistics.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const TRIVIAL_SERVER = join(REPO_ROOT, 'bench/fixtures/trivial-server.ts');

/** The CLI as a user runs it, built first when stale (one way to build it: test/support/dist.ts). */
export { BUILT_CLI, builtCli } from '../test/support/dist.js';

/** The trivial upstream as a stdio command line (the project's Node, TypeScript through tsx). */
export function trivialUpstream(): { command: string; args: string[] } {
  return { command: process.execPath, args: ['--import', 'tsx', TRIVIAL_SERVER] };
}

export interface ServerProcess {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** stdout and stderr so far (the last 20,000 characters). */
  output(): string;
  /** SIGTERM to its process group (it and the upstreams it started), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Starts `command args…` in a process group of its own and resolves once
 * `ready` finds its URL in what it prints — or, with `listensOn`, once that
 * loopback port accepts connections; rejects (and kills it) if it exits first
 * or is not ready within `timeoutMs`.
 */
export async function startServerProcess(options: {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  ready: (output: string) => string | undefined;
  /** Ready when 127.0.0.1:port accepts connections (for servers that print nothing); `ready` gives the URL. */
  listensOn?: number;
  timeoutMs?: number;
}): Promise<ServerProcess> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Nothing outlives the benchmark, even when it fails half-way.
    process.once('exit', () => {
      for (const child of running) killGroup(child, 'SIGKILL');
    });
  }
  const child = spawn(options.command, options.args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const stop = async (graceMs = 5_000) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      killGroup(child, 'SIGKILL'); // whatever it started and left behind
      return;
    }
    killGroup(child, 'SIGTERM');
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    killGroup(child, 'SIGKILL');
  };
  const url = await new Promise<string>((resolve, reject) => {
    const timeout = setTimeout(
      () => fail(new Error(`not ready after ${(options.timeoutMs ?? 60_000) / 1000} s`)),
      options.timeoutMs ?? 60_000,
    );
    const check = () => {
      if (options.listensOn !== undefined) return;
      const found = options.ready(output);
      if (found) {
        clearTimeout(timeout);
        child.stdout?.off('data', check);
        child.stderr?.off('data', check);
        resolve(found);
      }
    };
    const fail = (error: Error) => {
      clearTimeout(timeout);
      void stop(500);
      const tail = output.trim().split('\n').slice(-5).join(' | ');
      reject(new Error(`${error.message}${tail ? ` — ${tail}` : ''}`));
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('error', (error) => fail(error));
    if (options.listensOn !== undefined) {
      let settled = false;
      child.once('exit', () => {
        settled = true;
      });
      waitForPort(options.listensOn, options.timeoutMs ?? 60_000).then(
        () => {
          if (settled) return;
          settled = true;
          clearTimeout(timeout);
          resolve(options.ready(output) as string);
        },
        (error: Error) => {
          if (!settled) fail(error);
        },
      );
    }
    child.once('exit', (code, signal) => fail(new Error(`exited (${signal ?? code}) before it was ready`)));
  });
  return { name: options.name, url, pid: child.pid as number, output: () => output, stop };
}

/**
 * Waits until these processes and all their descendants (the servers started by
 * startServerProcess, with everything they started, in whatever process group) use no CPU for
 * `windowMs`: at most one clock tick in the window. Used between session starts, so that a
 * process one path started after the last session (a gateway's spare being replaced, an upstream
 * shutting down) is not timed as the next path's. Gives up after `timeoutMs`; returns how long it
 * waited, ms; without /proc it returns at once.
 */
export async function cpuQuiet(
  roots: number[],
  options: { windowMs?: number; timeoutMs?: number } = {},
): Promise<number> {
  const windowMs = options.windowMs ?? 200;
  const started = performance.now();
  const deadline = started + (options.timeoutMs ?? 15_000);
  let last = treeTicks(roots);
  if (last === undefined) return 0;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const now = treeTicks(roots) as number;
    if (now - last <= 1) break;
    last = now;
  }
  return performance.now() - started;
}

/** CPU clock ticks (user + system) used so far by `roots`, their descendants and the descendants gone; undefined without /proc. */
function treeTicks(roots: number[]): number | undefined {
  let names: string[];
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const parentOf = new Map<number, number>();
  const ticksOf = new Map<number, number>();
  for (const name of names) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // After the command's closing parenthesis: state, ppid, … utime, stime, cutime, cstime (the
      // 14th to 17th fields). A child that exited and was waited for moves its time into its
      // parent's cutime and cstime: counted without them, an upstream exiting would hide the time
      // of one starting.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(name), Number(fields[1]));
      ticksOf.set(
        Number(name),
        fields.slice(11, 15).reduce((sum, field) => sum + Number(field), 0),
      );
    } catch {
      // Gone between the listing and the read.
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parentOf.get(p))
      if (roots.includes(p)) return true;
    return false;
  };
  let sum = 0;
  for (const [pid, ticks] of ticksOf) if (inTree(pid)) sum += ticks;
  return sum;
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
export async function waitForPort(port: number, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until)
      throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * POSTs without the transport's session-long AbortSignal. Node's fetch hangs
 * one abort listener per request on that signal and lets it go only when the
 * request is garbage-collected; over thousands of calls on one session they
 * pile up (MaxListenersExceededWarning past 1,500), and every new request
 * walks the pile. The signal only serves close(), and a series closes its
 * session when no call is in flight. The GET stream keeps it.
 */
const fetchWithoutPostSignal: FetchLike = (url, init) =>
  fetch(url, init?.method === 'POST' ? { ...init, signal: null } : init);

/** The official SDK client over Streamable HTTP: one session. */
export async function connectClient(url: string, name = 'idem-bench'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithoutPostSignal }));
  return client;
}

export interface Load {
  /** Latency of each completed call, µs. */
  samples: number[];
  /** Wall time of the whole batch, s. */
  seconds: number;
  /** Calls that threw or answered isError (or failed `check`). */
  errors: number;
  firstError?: string;
  /** True when the time budget ran out before every call was sent. */
  cut: boolean;
}

/**
 * `calls` calls with `concurrency` of them in flight at every moment (each
 * worker sends its next call when its last one is answered), stopping early
 * when `budgetMs` runs out.
 */
export async function drive(options: {
  calls: number;
  concurrency: number;
  call: (i: number) => Promise<unknown>;
  budgetMs?: number;
}): Promise<Load> {
  const samples: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  let cut = false;
  const deadline = performance.now() + (options.budgetMs ?? Number.POSITIVE_INFINITY);
  const worker = async () => {
    for (;;) {
      if (next >= options.calls) return;
      if (performance.now() > deadline) {
        cut = true;
        return;
      }
      const i = next++;
      const start = process.hrtime.bigint();
      try {
        const result = (await options.call(i)) as CallToolResult | undefined;
        if (result?.isError) throw new Error(JSON.stringify(result).slice(0, 300));
        samples.push(Number(process.hrtime.bigint() - start) / 1000);
      } catch (error) {
        errors++;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  const seconds = (performance.now() - start) / 1000;
  return { samples, seconds, errors, ...(firstError ? { firstError } : {}), cut };
}

export interface Summary {
  calls: number;
  p50: number;
  p99: number;
  perSecond: number;
  errors: number;
  firstError?: string;
  cut: boolean;
}

/** Several loads of one series (rounds) as one: samples pooled, calls/s over the summed wall time. */
export function summarize(loads: Load[]): Summary {
  const sorted = Float64Array.from(loads.flatMap((l) => l.samples)).sort();
  const at = (q: number) =>
    sorted.length === 0
      ? Number.NaN
      : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);
  const seconds = loads.reduce((sum, l) => sum + l.seconds, 0);
  const firstError = loads.find((l) => l.firstError)?.firstError;
  return {
    calls: sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    perSecond: sorted.length / seconds,
    errors: loads.reduce((sum, l) => sum + l.errors, 0),
    ...(firstError ? { firstError } : {}),
    cut: loads.some((l) => l.cut),
  };
}

export const us = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en') : '–');
export const perSec = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en') : '–');
export const ratio = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '–');

export function reason(error: unknown): string {
  return (error instanceof Error ? error.message : String(error))
    .replace(/\s+/g, ' ')
    .replace(/\|/g, '/')
    .slice(0, 200);
}
