/**
 * Shared pieces of the gateway tests: a fresh in-process gateway on loopback
 * HTTP, the CLI as a subprocess, the counting upstream, raw HTTP with full
 * control over headers (Host included), and fetch layers that lose responses.
 * No mocks: every request goes through real sockets and real processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ServedHttp } from '../../src/front/http-options.js';
import { type GatewayConfig, GatewayConfigSchema } from '../../src/gateway/config.js';
import { Gateway, type GatewayOptions } from '../../src/gateway/gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';

export const COUNTING_SERVER = join(REPO_ROOT, 'test/gateway/fixtures/counting-server.ts');

/** The counting upstream as a stdio command; it counts into `dir`. */
export function countingUpstream(dir: string): { command: string; args: string[]; cwd: string } {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', COUNTING_SERVER, '--dir', dir],
    cwd: REPO_ROOT,
  };
}

/** `idem gateway …` as a command line (the project's Node, the compiled CLI). */
export const cliCommand = idemCommand;

const temporaries: string[] = [];

/** A fresh temporary directory, removed by `removeTemporaries()`. */
export function freshDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `idem-${prefix}-`));
  temporaries.push(dir);
  return dir;
}

export function removeTemporaries(): void {
  for (const dir of temporaries.splice(0)) rmSync(dir, { recursive: true, force: true });
}

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

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * One HTTP request with exactly these headers (node:http, so Host and Origin
 * can be anything), resolving with the whole body.
 */
export function rawRequest(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    timeoutMs?: number;
  } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'POST',
        headers: options.headers ?? {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 60_000, () =>
      req.destroy(new Error(`no complete answer within ${options.timeoutMs ?? 60_000} ms`)),
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** JSON-RPC messages in a response body: one JSON document, or the `data:` lines of an SSE stream. */
export function messagesOf(response: RawResponse): Record<string, unknown>[] {
  const type = String(response.headers['content-type'] ?? '');
  if (type.includes('text/event-stream')) {
    return response.text
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
  }
  return response.text ? [JSON.parse(response.text) as Record<string, unknown>] : [];
}

export const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

/** A raw MCP session over HTTP: initialize, initialized, then `post` with the session headers. */
export async function rawSession(
  url: string,
  clientName: string,
  extraHeaders: Record<string, string> = {},
): Promise<{
  sessionId: string;
  headers: Record<string, string>;
  post(message: unknown, headers?: Record<string, string>): Promise<RawResponse>;
  call(message: { id: string | number } & Record<string, unknown>): Promise<Record<string, unknown>>;
}> {
  const init = await rawRequest(url, {
    headers: { ...MCP_HEADERS, ...extraHeaders },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: clientName, version: '1' },
      },
    }),
  });
  const sessionId = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof sessionId !== 'string')
    throw new Error(`initialize failed: ${init.status} ${init.text}`);
  const headers = {
    ...MCP_HEADERS,
    ...extraHeaders,
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-11-25',
  };
  const post = (message: unknown, more: Record<string, string> = {}) =>
    rawRequest(url, {
      headers: { ...headers, ...more },
      body: typeof message === 'string' ? message : JSON.stringify(message),
    });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    sessionId,
    headers,
    post,
    call: async (message) => {
      const response = await post({ jsonrpc: '2.0', ...message });
      const reply = messagesOf(response).find((m) => m.id === message.id);
      if (!reply)
        throw new Error(`no reply to ${JSON.stringify(message.id)}: ${response.status} ${response.text}`);
      return reply;
    },
  };
}

export interface RpcSummary {
  id?: unknown;
  method?: string;
  params?: { name?: unknown; arguments?: unknown };
}

/** The JSON-RPC message in a fetch `init.body`, if it is one (the SDK sends strings). */
export function rpcOf(init: RequestInit | undefined): RpcSummary | undefined {
  if (typeof init?.body !== 'string') return undefined;
  try {
    const parsed = JSON.parse(init.body) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as RpcSummary)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A response that was received in full and then thrown away, as a dropped connection would. */
export interface LostResponse {
  tool: string;
  id: unknown;
  status: number;
  /** What the gateway had answered (so the test knows the call really ran). */
  body: string;
}

/**
 * A fetch that loses the first response to a `tools/call` of each tool in
 * `tools`: the request reaches the gateway and runs, its response is read to
 * the end and discarded. Then `afterLoss` runs (a test may change the world
 * there), and either the same POST is sent again (`resend`, same JSON-RPC id)
 * or the fetch fails like a broken network (`fail`), leaving the retry to the
 * agent.
 */
export function losingFetch(options: {
  tools: string[];
  mode: 'resend' | 'fail';
  afterLoss?: (lost: LostResponse) => Promise<void> | void;
  next?: FetchLike;
}): { fetch: FetchLike; lost: LostResponse[]; calls: { tool: string; id: unknown }[] } {
  const next = options.next ?? fetch;
  const pending = new Set(options.tools);
  const lost: LostResponse[] = [];
  const calls: { tool: string; id: unknown }[] = [];
  const wrapped: FetchLike = async (url, init) => {
    const rpc = rpcOf(init);
    const tool = rpc?.method === 'tools/call' ? String(rpc.params?.name) : undefined;
    if (tool !== undefined) calls.push({ tool, id: rpc?.id });
    if (tool === undefined || !pending.has(tool)) return next(url, init);
    pending.delete(tool);
    const first = await next(url, init);
    const loss: LostResponse = { tool, id: rpc?.id, status: first.status, body: await first.text() };
    lost.push(loss);
    await options.afterLoss?.(loss);
    if (options.mode === 'fail') throw new TypeError(`fetch failed: the response to ${tool} was lost`);
    calls.push({ tool, id: rpc?.id });
    return next(url, init);
  };
  return { fetch: wrapped, lost, calls };
}

/** The JSON-RPC result inside a lost response body (JSON or SSE). */
export function lostResult(loss: LostResponse): CallToolResult {
  const type = loss.body.trimStart().startsWith('{') ? 'application/json' : 'text/event-stream';
  const reply = messagesOf({ status: loss.status, headers: { 'content-type': type }, text: loss.body }).find(
    (m) => m.id === loss.id,
  );
  if (!reply?.result) throw new Error(`the lost response carried no result: ${loss.body}`);
  return reply.result as CallToolResult;
}

/** The text of a tool result's first content item. */
export function textOf(result: unknown): string {
  const content = (result as CallToolResult).content ?? [];
  const first = content[0];
  return first?.type === 'text' ? first.text : '';
}

/** The `structuredContent.idem` block of an Idem answer, if it is one. */
export interface IdemInfo {
  code: string;
  ref: string | null;
  state: string | null;
}

export function idemOf(result: unknown): IdemInfo | undefined {
  return (result as { structuredContent?: { idem?: IdemInfo } } | undefined)?.structuredContent?.idem;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns true; throws after `timeoutMs`. */
export async function waitUntil(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** Resident set size of a process in bytes (Linux /proc). */
export async function rssOf(pid: number): Promise<number> {
  const { readFileSync } = await import('node:fs');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

export function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Spawns `idem gateway …` with IDEM_DATA_DIR; stdio pipes are the caller's. */
export function spawnGateway(args: string[], env: Record<string, string>): ChildProcess {
  const cli = cliCommand(['gateway', ...args]);
  return spawn(cli.command, cli.args, {
    cwd: cli.cwd,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
