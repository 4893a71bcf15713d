/**
 * Drives the MCP Inspector's `mcpdo` CLI (npm @modelcontextprotocol/inspector
 * 2.x, on Node 22) against a stdio command or a Streamable HTTP URL — a
 * second, independent client for checking that a server (or the gateway in
 * front of it) looks right to real tooling.
 *
 * mcpdo keeps connections in a daemon that its first command starts. Each
 * session here gets a private home, catalog and daemon directory in a
 * temporary folder (HOME points there), so it never touches ~/.mcp-inspector or another session's
 * daemon; `close()` stops that daemon (and the stdio server it spawned) and
 * removes the folder.
 *
 *   const inspector = await InspectorSession.open({ url });
 *   const { tools } = await inspector.listTools();
 *   const result = await inspector.callTool('increment_counter', { key: 'a' });
 *   await inspector.close();
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { node22, packageBin } from './node22.js';

export type InspectorTarget =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { url: string };

export interface McpdoOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A failure mcpdo reported as `{"error":{"code","message"}}` (e.g. `tool_not_found`). */
export class InspectorError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly output: McpdoOutput,
  ) {
    super(`mcpdo ${code}: ${message}`);
    this.name = 'InspectorError';
  }
}

/** mcpdo's exit code for a tool result with isError: true (the result is still printed). */
const EXIT_TOOL_IS_ERROR = 5;
const CONNECTION = 'target';

export class InspectorSession {
  private constructor(
    private readonly dir: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Connects mcpdo to the target (a private daemon starts); throws if it cannot. */
  static async open(
    target: InspectorTarget,
    options: {
      timeoutMs?: number;
      /** Elicitation capability mcpdo advertises; default off, so no tool call parks awaiting an answer. */
      elicit?: 'off' | 'form' | 'url' | 'both';
    } = {},
  ): Promise<InspectorSession> {
    // A short path: the daemon's Unix socket lives in it (107 bytes at most on Linux).
    const dir = mkdtempSync(join(tmpdir(), 'mcpdo-'));
    const entry =
      'url' in target
        ? { type: 'streamable-http', url: target.url }
        : {
            command: target.command,
            args: target.args ?? [],
            // Inherited by the server and whatever it starts (the gateway passes its environment on to
            // its upstream): close() waits until no process carries it any more.
            env: { ...target.env, [SESSION_MARK]: dir },
            cwd: target.cwd ?? process.cwd(),
          };
    writeFileSync(
      join(dir, 'servers.json'),
      JSON.stringify({ mcpServers: { [CONNECTION]: entry } }, null, 2),
    );
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: dir,
      MCP_INSPECTOR_DAEMON_DIR: join(dir, 'daemon'),
      // No OAuth here; the file store in the private home avoids probing for an OS keychain.
      MCP_INSPECTOR_SECRET_STORE: 'file',
      NO_COLOR: '1',
    };
    const session = new InspectorSession(dir, env);
    try {
      const connectTimeout = String(options.timeoutMs ?? 30_000);
      const out = await session.run([
        'connect',
        CONNECTION,
        '--config',
        join(dir, 'servers.json'),
        '--connect-timeout',
        connectTimeout,
        '--elicit',
        options.elicit ?? 'off',
      ]);
      if (out.code !== 0) throw failure(out);
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  /** Runs `mcpdo --format json <args>` with this session's environment, on Node 22. */
  run(args: string[], timeoutMs = 60_000): Promise<McpdoOutput> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        node22(),
        [packageBin('@modelcontextprotocol/inspector', 'mcpdo'), '--format', 'json', '--plain', ...args],
        { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`mcpdo ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stderr}`));
      }, timeoutMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** `tools/list` as the Inspector sees it. */
  async listTools(): Promise<{ tools: Tool[] }> {
    const out = await this.run(['--connection', CONNECTION, 'tools/list']);
    if (out.code !== 0) throw failure(out);
    return parseJson(out) as { tools: Tool[] };
  }

  /** `tools/call`; a result with isError: true is returned, not thrown (mcpdo exits 5 for it). */
  async callTool(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
    const out = await this.run([
      '--connection',
      CONNECTION,
      'tools/call',
      '--tool-name',
      name,
      '--tool-args-json',
      JSON.stringify(args),
    ]);
    if (out.code !== 0 && !(out.code === EXIT_TOOL_IS_ERROR && out.stdout.trim())) throw failure(out);
    return parseJson(out) as CallToolResult;
  }

  /**
   * Stops this session's daemon (closing its connection and any stdio server),
   * waits until that server and what it started have exited — a gateway still
   * writes its data directory as it closes, after the daemon is gone — and
   * removes the session's folder.
   */
  async close(): Promise<void> {
    try {
      await this.run(['daemon', 'stop'], 15_000);
      const mark = `${SESSION_MARK}=${this.dir}`;
      const started = Date.now();
      while (processesWith(mark).length > 0) {
        if (Date.now() - started > 30_000)
          throw new Error(`the stdio server of ${this.dir} is still running 30 s after its client stopped`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** One-shot: connect, list the tools, disconnect. */
export async function inspectorListTools(target: InspectorTarget): Promise<{ tools: Tool[] }> {
  const session = await InspectorSession.open(target);
  try {
    return await session.listTools();
  } finally {
    await session.close();
  }
}

/** One-shot: connect, call one tool, disconnect. */
export async function inspectorCallTool(
  target: InspectorTarget,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  const session = await InspectorSession.open(target);
  try {
    return await session.callTool(name, args);
  } finally {
    await session.close();
  }
}

/** The environment variable that marks the processes a session's stdio server is made of. */
const SESSION_MARK = 'IDEM_TEST_INSPECTOR_SESSION';

/** Pids of the processes whose environment holds `entry` (NAME=value), read from /proc. */
function processesWith(entry: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(entry))
        found.push(Number(name));
    } catch {
      // Gone meanwhile, or not ours to read: not a server of this session.
    }
  }
  return found;
}

function parseJson(out: McpdoOutput): unknown {
  try {
    return JSON.parse(out.stdout);
  } catch {
    throw new Error(`mcpdo printed no JSON (exit ${out.code}):\n${out.stdout}\n${out.stderr}`);
  }
}

function failure(out: McpdoOutput): Error {
  // The error is the last JSON line on stderr; warnings may precede it.
  for (const line of out.stderr.trim().split('\n').reverse()) {
    try {
      const { error } = JSON.parse(line) as { error?: { code?: string; message?: string } };
      if (error) return new InspectorError(error.code ?? 'unknown', error.message ?? '', out);
    } catch {
      // not the JSON line
    }
  }
  return new Error(`mcpdo failed (exit ${out.code}):\n${out.stdout}\n${out.stderr}`);
}
