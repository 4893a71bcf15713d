/**
 * The agent of the replay-honesty scenarios: the official SDK client over
 * Streamable HTTP, whose fetch can lose the answer to one chosen call. The
 * answer is lost after the server wrote it and the client read it to the end
 * (a connection dropped on the way back), so the call ran and nothing races:
 * then the fetch either fails like a reset connection (`lose`), or sends the
 * very same POST again (`resend`: same JSON-RPC id, same session).
 *
 * The losses themselves are the probe's (src/probe/losses.ts), one home for both.
 *
 * Every answer the agent gets is kept in the cell's `AnswerLog`: whether it was
 * a replay, and whether its first text item is the replay note or the stored
 * content (what a model reads first).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { droppingStdio, losingFetch, type PlannedLoss } from '../../../src/probe/losses.js';

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

/** A stdio server for the agent to start (over stdio, the agent's session is that process). */
export interface StdioCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export class Agent {
  readonly #client: Client;
  readonly #log: AnswerLog;
  readonly #losses: PlannedLoss[];

  private constructor(client: Client, log: AnswerLog, losses: PlannedLoss[]) {
    this.#client = client;
    this.#log = log;
    this.#losses = losses;
  }

  /** A new session of the agent (a new connection; the same client name). */
  static async connect(url: string, log: AnswerLog): Promise<Agent> {
    const losses: PlannedLoss[] = [];
    const client = new Client({ name: AGENT_NAME, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: losingFetch(losses) }));
    return new Agent(client, log, losses);
  }

  /**
   * A new session over stdio: the agent starts `server` (an `idem gateway` on stdio) and speaks to
   * it; closing the agent ends that process, as a client that dies does.
   */
  static async connectStdio(server: StdioCommand, log: AnswerLog): Promise<Agent> {
    const losses: PlannedLoss[] = [];
    const client = new Client({ name: AGENT_NAME, version: '1.0.0' });
    const transport = new StdioClientTransport({ ...server, stderr: 'ignore' });
    await client.connect(transport);
    droppingStdio(transport, losses);
    return new Agent(client, log, losses);
  }

  /**
   * Over stdio: calls a tool, and the agent dies as its answer arrives (the answer was written by
   * the server and is never read). Resolves once the agent (and with it its stdio server) has ended.
   */
  async callDyingOnAnswer(tool: string, args: Args = {}): Promise<void> {
    const answered = new Promise<void>((resolve) =>
      this.#losses.push({ tool, args, mode: 'lose', dropped: resolve }),
    );
    const call = this.call(tool, args).then(
      () => 'answered',
      (error: unknown) => String(error),
    );
    await answered;
    await this.close();
    const outcome = await call;
    if (outcome === 'answered') throw new Error(`the answer to ${tool} was not lost`);
    this.#log.note(`${tool}: the agent died as the answer arrived`);
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
    this.#losses.push({ tool, args, mode: 'lose' });
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
