/**
 * The agent of the replay-honesty scenarios: the official SDK client over
 * Streamable HTTP, whose fetch can lose the answer to one chosen call. The
 * answer is lost after the server wrote it and the client read it to the end
 * (a connection dropped on the way back), so the call ran and nothing races:
 * then the fetch either fails like a reset connection (`lose`), or sends the
 * very same POST again (`resend`: same JSON-RPC id, same session).
 *
 * Every answer the agent gets is kept in the cell's `AnswerLog`: whether it was
 * a replay, and whether its first text item is the replay note or the stored
 * content (what a model reads first).
 */
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { rpcOf } from '../losing-fetch.js';

/** One client name for every session of a cell: a reconnected or restarted agent is the same actor. */
export const AGENT_NAME = 'replay-honesty-agent';

export interface Answer {
  tool: string;
  result: CallToolResult;
  /** `_meta["io.idem/replayed"]`: a stored result handed back again. */
  replayed: boolean;
  /** The first text item is Idem's replay note, not the stored content. */
  noteFirst: boolean;
}

/** Everything the agents of one cell were answered, in order. */
export class AnswerLog {
  readonly answers: Answer[] = [];
  /** One line per step, for a reader of a failing cell. */
  readonly saw: string[] = [];

  record(tool: string, result: CallToolResult): CallToolResult {
    const replayed = result._meta?.['io.idem/replayed'] === true;
    const first = firstText(result);
    const noteFirst = first.startsWith('[idem]');
    this.answers.push({ tool, result, replayed, noteFirst });
    this.saw.push(
      `${tool}: ${result.isError ? 'error: ' : ''}${first.slice(0, 80)}${replayed ? ' [replayed]' : ''}`,
    );
    return result;
  }

  note(line: string): void {
    this.saw.push(line);
  }

  get replays(): Answer[] {
    return this.answers.filter((a) => a.replayed);
  }
}

export function firstText(result: CallToolResult): string {
  const first = result.content.find((c) => c.type === 'text');
  return first?.type === 'text' ? first.text : '';
}

type Args = Record<string, unknown>;

interface Loss {
  tool: string;
  args: Args;
  mode: 'lose' | 'resend';
  beforeResend: () => void | Promise<void>;
}

export class Agent {
  readonly #client: Client;
  readonly #log: AnswerLog;
  readonly #losses: Loss[];

  private constructor(client: Client, log: AnswerLog, losses: Loss[]) {
    this.#client = client;
    this.#log = log;
    this.#losses = losses;
  }

  /** A new session of the agent (a new connection; the same client name). */
  static async connect(url: string, log: AnswerLog): Promise<Agent> {
    const losses: Loss[] = [];
    const client = new Client({ name: AGENT_NAME, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: losingFetch(losses) }));
    return new Agent(client, log, losses);
  }

  /** Calls a tool and waits for its answer. */
  async call(tool: string, args: Args = {}, signal?: AbortSignal): Promise<CallToolResult> {
    const result = (await this.#client.callTool(
      { name: tool, arguments: args },
      CallToolResultSchema,
      signal ? { signal } : {},
    )) as CallToolResult;
    return this.#log.record(tool, result);
  }

  /**
   * Calls a tool whose answer is lost: it runs, its answer is written and read, then the fetch
   * fails like a reset connection. Resolves once the agent has seen the failure.
   */
  async callLosingAnswer(tool: string, args: Args = {}): Promise<void> {
    this.#losses.push({ tool, args, mode: 'lose', beforeResend: () => {} });
    const outcome = await this.call(tool, args).then(
      () => 'answered',
      (error: unknown) => String(error),
    );
    if (!outcome.includes('was lost')) throw new Error(`the answer to ${tool} was not lost: ${outcome}`);
    this.#log.note(`${tool}: answer lost (the agent saw a transport error)`);
  }

  /**
   * Calls a tool whose first answer is lost and whose POST is then sent again as it was (same
   * JSON-RPC id, same session), after `beforeResend` (a step of the clock).
   */
  callResending(
    tool: string,
    args: Args = {},
    beforeResend: () => void | Promise<void> = () => {},
  ): Promise<CallToolResult> {
    this.#losses.push({ tool, args, mode: 'resend', beforeResend });
    return this.call(tool, args);
  }

  async close(): Promise<void> {
    await this.#client.close().catch(() => {});
  }
}

/** The fetch of one session: loses the answer of the next call that matches a planned loss. */
function losingFetch(losses: Loss[]): FetchLike {
  return async (url, init) => {
    const rpc = rpcOf(init);
    const at =
      rpc?.method === 'tools/call'
        ? losses.findIndex(
            (l) => l.tool === rpc.params?.name && isDeepStrictEqual(l.args, rpc.params?.arguments ?? {}),
          )
        : -1;
    if (at < 0) return fetch(url, init);
    const [loss] = losses.splice(at, 1) as [Loss];
    const first = await fetch(url, init);
    await first.text();
    if (loss.mode === 'lose') throw new TypeError(`fetch failed: the response to ${loss.tool} was lost`);
    await loss.beforeResend();
    return fetch(url, init);
  };
}
