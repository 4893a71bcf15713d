/**
 * The client matrix: one way to connect each kind of MCP client the project
 * must serve, through a URL (Streamable HTTP) or a stdio command, behind one
 * small interface (list, call, close, and what was negotiated).
 *
 *   v2-2026      the v2 SDK client pinned to 2026-07-28 (no fallback)
 *   v2-auto      the v2 SDK client in auto mode (probes server/discover, falls back to initialize)
 *   v2-legacy    the v2 SDK client in its default legacy mode (initialize, 2025-11-25)
 *   sdk-1.10     the v1.10.2 SDK client (initialize, asks 2024-11-05), as older hosts ship it
 *
 * Used directly against the conformance fixture (clients.test.ts) and, by the
 * gateway tests, through each front.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as Client110 } from 'sdk-1-10/client/index.js';
import { StdioClientTransport as StdioClientTransport110 } from 'sdk-1-10/client/stdio.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport110 } from 'sdk-1-10/client/streamableHttp.js';

export const CLIENT_KINDS = ['v2-2026', 'v2-auto', 'v2-legacy', 'sdk-1.10'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** Where the server is: a Streamable HTTP URL, or a command the client spawns and speaks stdio to. */
export type ClientTarget =
  | { url: string }
  | { command: string; args: string[]; cwd?: string; env?: Record<string, string> };

export interface MatrixClient {
  kind: ClientKind;
  /** `modern` (2026-07-28: per-request envelope, no session) or `legacy` (initialize and a session). */
  era: 'modern' | 'legacy';
  /** The protocol version the connection runs at. */
  protocolVersion: string;
  /** Names of the tools the server lists. */
  listTools(): Promise<string[]>;
  /** Calls a tool; `signal` aborts the request (2026-07-28 over HTTP: closes its stream; else notifications/cancelled). */
  callTool(
    name: string,
    args?: Record<string, unknown>,
    options?: { signal?: AbortSignal },
  ): Promise<ToolResult>;
  close(): Promise<void>;
}

/** A tool result as either SDK returns it (content, isError, structuredContent, _meta …). */
export type ToolResult = Record<string, unknown> & { content?: unknown[]; isError?: boolean };

const CLIENT_INFO = (kind: ClientKind) => ({ name: `idem-matrix-${kind}`, version: '1.0.0' });

/** Connects a client of `kind` to `target`; rejects (and leaves nothing running) if it cannot. */
export async function connectClient(kind: ClientKind, target: ClientTarget): Promise<MatrixClient> {
  return kind === 'sdk-1.10' ? connectSdk110(target) : connectV2(kind, target);
}

async function connectV2(kind: Exclude<ClientKind, 'sdk-1.10'>, target: ClientTarget): Promise<MatrixClient> {
  const mode = { 'v2-2026': { pin: '2026-07-28' }, 'v2-auto': 'auto', 'v2-legacy': 'legacy' } as const;
  const client = new Client(CLIENT_INFO(kind), {
    capabilities: {},
    versionNegotiation: { mode: mode[kind] },
  });
  const transport =
    'url' in target
      ? new StreamableHTTPClientTransport(new URL(target.url))
      : new StdioClientTransport({ ...target, stderr: 'ignore' });
  try {
    await client.connect(transport);
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  const era = client.getProtocolEra();
  const protocolVersion = client.getNegotiatedProtocolVersion();
  if (!era || !protocolVersion) {
    await client.close();
    throw new Error(`${kind}: connected without a negotiated era/version`);
  }
  return {
    kind,
    era,
    protocolVersion,
    listTools: async () => (await client.listTools()).tools.map((tool) => tool.name),
    callTool: async (name, args = {}, options = {}) =>
      (await client.callTool(
        { name, arguments: args },
        options.signal ? { signal: options.signal } : {},
      )) as ToolResult,
    close: () => client.close(),
  };
}

async function connectSdk110(target: ClientTarget): Promise<MatrixClient> {
  const client = new Client110(CLIENT_INFO('sdk-1.10'), { capabilities: {} });
  const transport =
    'url' in target
      ? new StreamableHTTPClientTransport110(new URL(target.url))
      : new StdioClientTransport110({ ...target, stderr: 'ignore' });
  // 1.10 does not expose the version the server answered: read it off the initialize response.
  let protocolVersion: string | undefined;
  type Deliver = NonNullable<typeof transport.onmessage>;
  let deliver: Deliver | undefined;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => deliver,
    set: (handler: Deliver | undefined) => {
      deliver =
        handler &&
        ((message) => {
          const result = (message as { result?: { protocolVersion?: unknown } }).result;
          if (protocolVersion === undefined && typeof result?.protocolVersion === 'string')
            protocolVersion = result.protocolVersion;
          handler(message);
        });
    },
  });
  try {
    await client.connect(transport);
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  if (!protocolVersion) {
    await client.close();
    throw new Error('sdk-1.10: connected without seeing the initialize result');
  }
  return {
    kind: 'sdk-1.10',
    era: 'legacy',
    protocolVersion,
    listTools: async () => (await client.listTools()).tools.map((tool) => tool.name),
    callTool: async (name, args = {}, options = {}) =>
      (await client.callTool(
        { name, arguments: args },
        undefined,
        options.signal ? { signal: options.signal } : {},
      )) as ToolResult,
    close: () => client.close(),
  };
}
