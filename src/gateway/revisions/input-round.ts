import { randomUUID } from 'node:crypto';
import type { CallToolResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import canonicalize from 'canonicalize';
import type { UpstreamConnection, UpstreamReply } from '../../dispatch/mcp/index.js';
import type { TaskHold } from '../../executions/call.js';
import { envelopeOf } from '../../protocol/revisions.js';
import type { ToolCallRequest } from '../../protocol/tool-call-request.js';

// One input round (input-rounds.ts says what rounds are and serves them): what a 2025-era
// upstream asked in the middle of a 2026-07-28 client's call, held until the client answers.

/** The methods a server may ask of a client in a round. */
export const INPUT_METHODS: Record<string, 'elicitation' | 'sampling' | 'roots'> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/** What the shared connections tell a 2025-era upstream that 2026-07-28 clients may answer. */
export const ROUND_CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };

/** How many rounds one call may take before the gateway gives up (the v2 SDK's default). */
export const MAX_INPUT_ROUNDS = 10;

export const ROUND_STATE_PREFIX = 'idem-round:';

type Next = { final: CallToolResult } | { inputRequired: Record<string, unknown> };

/**
 * Held while a round holds questions: its client gets them as the call's answer and calls again
 * with the answers, so the call must not turn into a task meanwhile (TaskHold, executions/call.ts)
 * — a task made then would reach no one, and drop the questions.
 */
export class RoundHold implements TaskHold {
  #held = false;
  #free: (() => void)[] = [];

  set held(held: boolean) {
    this.#held = held;
    if (!held) for (const then of this.#free.splice(0)) then();
  }

  whenFree(then: () => void): void {
    if (this.#held) this.#free.push(then);
    else then();
  }
}

/**
 * One call of a 2026-07-28 client to a 2025-era upstream, open while its
 * execution runs: what the upstream asked and the client has not answered.
 */
export class InputRound {
  /** What the client echoes back as `requestState`: unguessable, and only good for this actor, tool and arguments. */
  readonly token = `${ROUND_STATE_PREFIX}${randomUUID()}`;
  readonly #asks = new Map<
    string,
    { request: { method: string; params: unknown }; settle(reply: UpstreamReply): void }
  >();
  #nextKey = 1;
  #wake: (() => void) | undefined;
  #ended = false;
  #execution: Promise<CallToolResult> | undefined;
  /** The call is not answered as a task while questions are held (RoundHold). */
  readonly hold = new RoundHold();

  /** Cancels the call (the client closed a later round's stream): the outcome becomes unknown. */
  #cancel: () => void = () => {};
  /** The arguments, canonical (RFC 8785), once the round runs. */
  argsKey: string | undefined;

  constructor(
    /** The open rounds of the shared connections, by token: this one is among them from `run` until it ends. */
    readonly rounds: Map<string, InputRound>,
    readonly actor: string,
    readonly tool: string,
    /** The call's arguments (checked before it runs): a continuation must be the same call. */
    readonly args: unknown,
    readonly upstream: string,
    /** What the client declared it can answer (its envelope's capabilities). */
    readonly clientCapabilities: Record<string, unknown>,
  ) {}

  /**
   * The execution this round belongs to, just started; the round ends with it. It is open from
   * here: the engine sends nothing to the upstream before its first await, so the upstream's
   * first question already finds it (forwarding.ts, `roundAsking`).
   */
  run(execution: Promise<CallToolResult>, cancel: () => void): void {
    this.#cancel = cancel;
    this.argsKey = argsKeyOf(this.args);
    this.rounds.set(this.token, this);
    this.#execution = execution;
    void execution.then(
      () => this.end(),
      () => this.end(),
    );
  }

  /** An upstream request during the call: held until the client answers it in its next call. */
  ask(request: JSONRPCRequest): Promise<UpstreamReply> {
    const capability = INPUT_METHODS[request.method];
    if (this.#ended || !capability || this.clientCapabilities[capability] === undefined) {
      return Promise.resolve({
        jsonrpc: '2.0',
        id: request.id,
        error: {
          code: -32601,
          message: `${request.method}: the client did not declare the ${capability ?? request.method} capability`,
        },
      });
    }
    const key = `idem-input-${this.#nextKey++}`;
    return new Promise<UpstreamReply>((resolve) => {
      this.#asks.set(key, {
        request: { method: request.method, params: request.params ?? {} },
        settle: (reply) => resolve({ ...reply, id: request.id } as UpstreamReply),
      });
      this.hold.held = true;
      this.#wake?.();
    });
  }

  /** The client's answers (its `inputResponses`), each to the held request of its key. */
  answer(responses: unknown): void {
    if (!responses || typeof responses !== 'object') return;
    for (const [key, result] of Object.entries(responses as Record<string, unknown>)) {
      const ask = this.#asks.get(key);
      if (!ask || !result || typeof result !== 'object') continue;
      this.#asks.delete(key);
      ask.settle({ jsonrpc: '2.0', id: 0, result: result as Record<string, unknown> });
    }
    this.hold.held = this.#asks.size > 0;
  }

  /** What the client's call gets now: the execution's result, or the questions still open. */
  async next(): Promise<Next> {
    const execution = (this.#execution as Promise<CallToolResult>).then((final): Next => ({ final }));
    if (this.#asks.size === 0) {
      const asked = new Promise<undefined>((resolve) => {
        this.#wake = () => resolve(undefined);
      });
      const first = await Promise.race([execution, asked]);
      this.#wake = undefined;
      if (first) return first;
    }
    return {
      inputRequired: {
        resultType: 'input_required',
        inputRequests: Object.fromEntries([...this.#asks].map(([key, ask]) => [key, ask.request])),
        requestState: this.token,
      },
    };
  }

  /** The execution finished: what is still held is answered with an error (nobody will answer it now). */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.hold.held = false;
    this.rounds.delete(this.token);
    for (const [key, ask] of this.#asks) {
      this.#asks.delete(key);
      ask.settle({
        jsonrpc: '2.0',
        id: 0,
        error: { code: -32000, message: 'the call ended before the client answered' },
      });
    }
  }

  cancel(): void {
    this.#cancel();
  }

  get ended(): boolean {
    return this.#ended;
  }
}

/**
 * A 2026-07-28 client's call on the shared connections, as input rounds see it: the open round it
 * continues (its `requestState` names this actor's round of the same tool and arguments; anything
 * else is a call of its own), else the round it opens when it runs, if its upstream speaks a
 * 2025-era revision (which asks for input by sending requests while the call runs).
 */
export function roundOf(
  rounds: Map<string, InputRound>,
  call: ToolCallRequest,
  actor: string,
  upstream: UpstreamConnection | undefined,
): { continues?: InputRound; round?: InputRound } {
  const state = call.requestState;
  if (typeof state === 'string' && state.startsWith(ROUND_STATE_PREFIX)) {
    const round = rounds.get(state);
    const same =
      round &&
      !round.ended &&
      round.actor === actor &&
      round.tool === call.name &&
      round.argsKey === argsKeyOf(call.arguments ?? {});
    if (same) return { continues: round };
  }
  if (upstream?.era !== 'legacy') return {};
  const capabilities = envelopeOf({ _meta: call.meta }).clientCapabilities ?? {};
  return {
    round: new InputRound(rounds, actor, call.name, call.arguments ?? {}, upstream.name, capabilities),
  };
}

/** Canonical arguments; '' for those too deeply nested to write (they are refused before a round runs). */
function argsKeyOf(args: unknown): string {
  try {
    return canonicalize(args) ?? '';
  } catch {
    return '';
  }
}
