/**
 * The probe's agent: the official SDK clients of both generations — v1
 * (@modelcontextprotocol/sdk, 2025-11-25 and earlier, sessions) and v2
 * (@modelcontextprotocol/client, which speaks 2026-07-28 where the server does)
 * — over Streamable HTTP or stdio, able to lose the answer to its next call.
 *
 * A lost answer was written by the target and read to its end by the client,
 * then dropped (a connection cut on the way back): the call ran, nothing races.
 * Then either the client sees a transport failure (`lose`), or the very same
 * message is sent again (`resend`: same JSON-RPC id, same session).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
  ProtocolError,
  SdkHttpError,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport as HttpV1,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { droppingStdio, losingFetch, type PlannedLoss } from './losses.js';

/** Where the agent connects: a Streamable HTTP URL, or a command it starts and speaks stdio to. */
export type Endpoint = { url: string } | { command: string; args: string[]; env?: Record<string, string> };

/** The SDK generation of a client: v1 (sessions, initialize) or v2 (2026-07-28 where the server speaks it). */
export type Generation = 'v1' | 'v2';

/**
 * What the agent was told, read as a model would: `done` (a result), `in flight`
 * (still running: Idem's IDEM_IN_FLIGHT, or a task), `unknown` (it may or may not
 * have happened: IDEM_OUTCOME_UNKNOWN, IDEM_REVIEW_REQUIRED), `failed` (a tool
 * error, a JSON-RPC error, an HTTP error status), `denied`, or `no answer` (the
 * client got nothing: a transport failure, its own timeout).
 */
export type AnswerClass = 'done' | 'in flight' | 'unknown' | 'failed' | 'denied' | 'no answer';

export interface Answer {
  class: AnswerClass;
  /** Idem's code when the answer carried one. */
  code?: string;
  /** The first words of the answer, for a reader. */
  text: string;
}

type Args = Record<string, unknown>;

const IDEM_CLASSES: Record<string, AnswerClass> = {
  IDEM_IN_FLIGHT: 'in flight',
  IDEM_OUTCOME_UNKNOWN: 'unknown',
  IDEM_REVIEW_REQUIRED: 'unknown',
  IDEM_AWAITING_APPROVAL: 'denied',
  IDEM_DENIED: 'denied',
};

export function classifyResult(result: CallToolResult & { task?: unknown }): Answer {
  if (result.task !== undefined) return { class: 'in flight', text: 'a task' };
  const idem = (result.structuredContent as { idem?: { code?: unknown } } | undefined)?.idem;
  const code = typeof idem?.code === 'string' ? idem.code : undefined;
  const first = (result.content ?? []).find((c) => c.type === 'text');
  const text = (first?.type === 'text' ? first.text : '').slice(0, 100);
  if (code) return { class: IDEM_CLASSES[code] ?? 'failed', code, text };
  return { class: result.isError ? 'failed' : 'done', text };
}

/**
 * An error the server said (a JSON-RPC error, an HTTP error status) is `failed`; one the client
 * made up (its timeout, a closed connection, a transport failure) is `no answer`.
 */
export function classifyError(error: unknown): Answer {
  const text = String(error instanceof Error ? error.message : error).slice(0, 100);
  const local = [ErrorCode.ConnectionClosed, ErrorCode.RequestTimeout] as number[];
  if (error instanceof McpError) return { class: local.includes(error.code) ? 'no answer' : 'failed', text };
  if (error instanceof ProtocolError || error instanceof SdkHttpError || error instanceof StreamableHTTPError)
    return { class: 'failed', text };
  return { class: 'no answer', text };
}

export interface ProbeAgent {
  generation: Generation;
  /** The protocol version the connection runs at (as far as the client tells). */
  protocolVersion: string;
  /** The next call's answer is lost: the client sees a transport failure, or the same message is sent again. */
  loseNextAnswer(mode: 'lose' | 'resend', args: Args): void;
  call(args: Args, options?: { timeoutMs?: number }): Promise<Answer>;
  close(): Promise<void>;
}

const CLIENT_INFO = { name: 'idem-probe', version: '1.0.0' };

/** Connects one agent session to `endpoint` as a client of `generation` calling `tool`. */
export async function connectAgent(
  endpoint: Endpoint,
  generation: Generation,
  tool: string,
): Promise<ProbeAgent> {
  const losses: PlannedLoss[] = [];
  const isHttp = 'url' in endpoint;
  const fetchLosing = losingFetch(losses);
  let transport: Transport;
  if (generation === 'v1') {
    transport = isHttp
      ? new HttpV1(new URL(endpoint.url), { fetch: fetchLosing })
      : new StdioV1({ ...endpoint, env: endpoint.env ?? childEnv(), stderr: 'ignore' });
    const client = new ClientV1(CLIENT_INFO, { capabilities: {} });
    await connectOrClose(client, transport);
    if (!isHttp) droppingStdio(transport, losses);
    return agentOf('v1', client.getServerVersion() ? negotiatedV1(transport) : 'unknown', losses, tool, {
      call: (args, signal, timeout) =>
        client.callTool({ name: tool, arguments: args }, undefined, {
          signal,
          ...(timeout ? { timeout } : {}),
        }),
      close: () => client.close(),
    });
  }
  transport = (isHttp
    ? new HttpV2(new URL(endpoint.url), { fetch: fetchLosing })
    : new StdioV2({
        ...endpoint,
        env: endpoint.env ?? childEnv(),
        stderr: 'ignore',
      })) as unknown as Transport;
  const client = new ClientV2(CLIENT_INFO, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  await connectOrClose(client as unknown as ClientV1, transport);
  if (!isHttp) droppingStdio(transport, losses);
  return agentOf('v2', client.getNegotiatedProtocolVersion() ?? 'unknown', losses, tool, {
    call: async (args, signal, timeout) =>
      (await client.callTool(
        { name: tool, arguments: args },
        { signal, ...(timeout ? { timeout } : {}) },
      )) as CallToolResult,
    close: () => client.close(),
  });
}

/** The protocol version v1 sent on the transport after initialize (HTTP: its header; stdio: what it asked). */
function negotiatedV1(transport: Transport): string {
  return (transport as { protocolVersion?: string }).protocolVersion ?? '2025-11-25';
}

async function connectOrClose(client: ClientV1, transport: Transport): Promise<void> {
  try {
    await client.connect(transport);
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
}

function agentOf(
  generation: Generation,
  protocolVersion: string,
  losses: PlannedLoss[],
  tool: string,
  sdk: {
    call(args: Args, signal: AbortSignal, timeoutMs?: number): Promise<unknown>;
    close(): Promise<void>;
  },
): ProbeAgent {
  return {
    generation,
    protocolVersion,
    loseNextAnswer: (mode, args) => losses.push({ tool, mode, args }),
    async call(args, options = {}) {
      const controller = new AbortController();
      // Over stdio the dropped answer would leave the call waiting: the client is told it was lost.
      const loss = losses.find((l) => isDeepStrictEqual(l.args, args) && !l.dropped);
      if (loss) loss.dropped = () => controller.abort(new Error('the answer was lost'));
      try {
        return classifyResult((await sdk.call(args, controller.signal, options.timeoutMs)) as CallToolResult);
      } catch (error) {
        return classifyError(error);
      }
    },
    close: () => sdk.close().catch(() => {}),
  };
}

/** The probe's environment for a stdio child (the SDK's default passes only a few variables). */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...Object.fromEntries(
      Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ),
    ...extra,
  };
}
