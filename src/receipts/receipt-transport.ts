import { randomUUID } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { IDEM_CODES, InvalidInputError } from '../errors.js';
import { idemAnswer } from '../executions/answers.js';
import { type CallerInfo, tokenRefOf } from '../identity/actor.js';
import { boundedText } from '../identity/client-text.js';
import type { Fingerprinter } from '../identity/fingerprint.js';
import { renderRequestId, requestKey } from '../identity/request-key.js';
import type { ActivityEventInput } from '../journal/events.js';
import { isNotification, isRequest, isResponse, isResultResponse } from '../protocol/message-kind.js';
import { envelopeOf } from '../protocol/revisions.js';
import { WrappedTransport } from '../support/wrapped-transport.js';
import type { ReceiptBook, ReceiptDecision, RequestDigest } from './receipt-book.js';
import { requestDigest } from './request-digest.js';

/** JSON-RPC "Invalid Request": the id is not usable for this content. */
export const REQUEST_ID_REUSED_JSONRPC_CODE = -32600;

/**
 * How request ids are scoped on this transport:
 * - `session`: the transport's MCP session id (Streamable HTTP with sessions);
 * - `connection`: this transport instance (stdio);
 * - `none`: ids have no session scope (stateless HTTP, 2026-07-28): the key adds
 *   method and tool, and a reused id with new content is a new request.
 */
export type IdScope = 'session' | 'connection' | 'none';

/** What to do with an arriving request. */
type Decision =
  /** Pass it on to the server (`registered`: a receipt now waits for its reply). */
  | { kind: 'forward'; registered: boolean }
  /**
   * Answer it from the receipt (`reply` carries the request's own id; null: the
   * receipt was released unanswered, decide again); the server never sees it.
   */
  | { kind: 'answer'; reply: Promise<JSONRPCMessage | null>; sameIdRunning: boolean };

/** What an HTTP front does with a request (see `admit`). */
export type Admission =
  /** Pass it to the SDK transport; if that refuses it, call `abandon` with its id. */
  | { kind: 'forward' }
  /** Send this reply (it carries the request's own id); the server never sees the request. */
  | { kind: 'answer'; reply: JSONRPCMessage };

/** How the receipt layer answered a request itself (the server never saw it): see `onAnswered`. */
export type ReceiptAnswer = 'resend' | 'id_reused' | 'full';

export interface ReceiptTransportOptions {
  book: ReceiptBook;
  fingerprinter: Fingerprinter;
  /** The authenticated caller; the same function the tool handlers use. */
  actorOf: (info: CallerInfo) => string;
  /** Whether calls to this tool have effects (read-only tools get no receipt). */
  hasEffects?: (tool: string) => boolean;
  /** Methods with effects besides `tools/call`. */
  extraMethods?: readonly string[];
  idScope?: IdScope;
  onEvent?: (event: ActivityEventInput) => void;
  /**
   * Agent runs for the sessions journal, the one place sessions are journaled (library and gateway
   * alike): start (after initialize is answered) and end (transport closed).
   */
  onSession?: (event: ActivityEventInput) => void;
  /** Each request this layer answers itself, never reaching a tool (for metrics: no engine counts them). */
  onAnswered?: (how: ReceiptAnswer) => void;
}

/**
 * A transport with receipts in it, as the fronts drive it (`admit`, `abandon`): a ReceiptTransport,
 * or a layer over one that passes both on (the library's tasks, library/task-transport.ts).
 */
export type AdmittingTransport = Transport & Pick<ReceiptTransport, 'admit' | 'abandon'>;

/**
 * Wraps any MCP transport with request receipts (layer 1). A resend of the
 * same JSON-RPC message is answered from its receipt and never reaches the
 * server a second time; a reused id with other content is refused.
 */
export class ReceiptTransport extends WrappedTransport {
  readonly #options: ReceiptTransportOptions;
  readonly #connectionId = randomUUID();
  readonly #methods: Set<string>;
  /** Requests still running here: rendered id → the id as it came, and how to settle its receipt. */
  readonly #pending = new Map<
    string,
    { id: RequestId; settle: (reply: JSONRPCMessage) => void; release: (tombstone?: boolean) => void }
  >();
  /** Ids already registered by `admit` (HTTP front): they pass straight through once. */
  readonly #admitted = new Set<string>();
  #clientName: string | undefined;
  #initialize: { id: RequestId; client: unknown; authInfo?: AuthInfo } | undefined;
  #started = false;
  /** Who the session belongs to, as of its start: its end is journaled under the same actor. */
  #sessionActor: string | undefined;
  #closed = false;

  constructor(inner: Transport, options: ReceiptTransportOptions) {
    super(inner);
    this.#options = options;
    this.#methods = new Set(['tools/call', ...(options.extraMethods ?? [])]);
    inner.onclose = () => {
      this.#closed = true;
      // The session is gone: nothing will answer what still runs in it, and its ids can never
      // come again. Without session scope a finished receipt may still answer a resend elsewhere.
      this.#pending.clear();
      this.#admitted.clear();
      this.#options.book.releaseGroup(this.#connectionId, this.#idScope() === 'none');
      if (this.#started) {
        this.#started = false;
        this.#options.onSession?.({
          kind: 'session_end',
          // The session's actor, as its start recorded it (the token it began with is gone by now).
          actor: this.#sessionActor ?? this.#actorNow(),
          requestRef: this.sessionId ?? null,
        });
      }
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.#receive(message, extra);
  }

  override get sessionId(): string | undefined {
    return this.inner.sessionId ?? (this.#idScope() === 'connection' ? this.#connectionId : undefined);
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (isResponse(message)) {
      const id = (message as { id?: RequestId }).id;
      if (this.#initialize && id === this.#initialize.id && isResultResponse(message)) {
        this.#started = true;
        this.#sessionActor = this.#actorNow();
        const token = tokenRefOf(this.#initialize.authInfo ? { authInfo: this.#initialize.authInfo } : {});
        this.#options.onSession?.({
          kind: 'session_start',
          actor: this.#sessionActor,
          requestRef: this.sessionId ?? null,
          detail: {
            client: (this.#initialize.client ?? null) as never,
            protocol_version: ((message.result as { protocolVersion?: string }).protocolVersion ??
              null) as never,
            ...(token ? { token: { issuer: token.issuer, jti: token.jti } } : {}),
          },
        });
        this.#initialize = undefined;
      }
      if (id !== undefined) {
        const pending = this.#pending.get(renderRequestId(id));
        // Settle before sending: if the first socket is gone, the resend still gets this reply. Kept
        // without its id (a resend is answered under its own), which may be as large as the body.
        if (pending) {
          this.#pending.delete(renderRequestId(id));
          pending.settle({ ...message, id: 0 } as JSONRPCMessage);
        }
      }
    }
    return this.inner.send(message, options);
  }

  #actorNow(): string {
    return this.#options.actorOf({
      ...(this.#initialize?.authInfo ? { authInfo: this.#initialize.authInfo } : {}),
      ...(this.#clientName ? { clientName: this.#clientName } : {}),
    });
  }

  #idScope(): IdScope {
    return this.#options.idScope ?? (this.inner.sessionId !== undefined ? 'session' : 'connection');
  }

  #receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    // Only the first initialize names the client: a second one is refused by the server, and
    // must not change who the calls on this connection belong to.
    if (
      isRequest(message) &&
      message.method === 'initialize' &&
      this.#clientName === undefined &&
      !this.#started
    ) {
      const info = (message.params as { clientInfo?: { name?: unknown; version?: unknown } } | undefined)
        ?.clientInfo;
      if (typeof info?.name === 'string') this.#clientName = info.name;
      this.#initialize = {
        id: message.id,
        // The sessions journal keeps it for good: bounded, as everything a client names is.
        client:
          info && typeof info.name === 'string'
            ? { name: boundedText(info.name), version: boundedText(String(info.version ?? '')) }
            : null,
        ...(extra?.authInfo ? { authInfo: extra.authInfo } : {}),
      };
    }
    if (isRequest(message) && this.#admitted.delete(renderRequestId(message.id))) {
      this.onmessage?.(message, extra);
      return;
    }
    if (isNotification(message) && message.method === 'notifications/cancelled') {
      this.#releaseCancelled(message.params);
    }
    this.#pass(message, extra);
  }

  #pass(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const decision = this.#decide(message, extra);
    if (decision.kind === 'forward') {
      this.onmessage?.(message, extra);
      return;
    }
    // The very same id still running here: the one reply reaches the pipe (stdio has
    // one), so sending a copy would answer twice.
    if (decision.sameIdRunning) return;
    const id = (message as { id: RequestId }).id;
    void decision.reply.then((reply) => (reply ? this.#replyTo(id, reply) : this.#pass(message, extra)));
  }

  /**
   * A cancelled request gets no response (MCP), so its receipt would wait
   * forever: release it. A resend then runs as a new request, which the
   * execution layer matches to the cancelled one's execution (nothing runs
   * twice); the id stays taken for other content (a tombstone).
   */
  #releaseCancelled(params: unknown): void {
    const requestId = (params as { requestId?: unknown } | undefined)?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const rendered = renderRequestId(requestId);
    const pending = this.#pending.get(rendered);
    if (!pending) return;
    this.#pending.delete(rendered);
    this.#admitted.delete(rendered);
    pending.release(true);
  }

  /**
   * For HTTP fronts, before the SDK transport sees the request: a resend or a
   * refused id is answered here, so it never displaces the first request's
   * stream; a new request is registered and will pass straight through. A
   * resend whose first copy is released unanswered is decided again.
   */
  async admit(message: JSONRPCMessage, extra?: MessageExtraInfo): Promise<Admission> {
    for (;;) {
      const decision = this.#decide(message, extra);
      if (decision.kind === 'forward') {
        if (decision.registered) this.#admitted.add(renderRequestId((message as { id: RequestId }).id));
        return { kind: 'forward' };
      }
      const reply = await decision.reply;
      if (reply) return { kind: 'answer', reply };
    }
  }

  /**
   * The HTTP transport refused a request that `admit` let through (bad
   * Accept, content type, protocol version…) or the response ended before it
   * reached the server: nothing ran, so its receipt goes (a resend is new).
   * No-op for a request the server received.
   */
  abandon(id: RequestId): void {
    const rendered = renderRequestId(id);
    if (!this.#admitted.delete(rendered)) return;
    const pending = this.#pending.get(rendered);
    this.#pending.delete(rendered);
    pending?.release();
  }

  #decide(message: JSONRPCMessage, extra?: MessageExtraInfo): Decision {
    if (this.#closed || !isRequest(message) || !this.#methods.has(message.method))
      return { kind: 'forward', registered: false };
    const params = (message.params ?? {}) as { name?: unknown; _meta?: unknown };
    const tool = typeof params.name === 'string' ? params.name : '';
    if (message.method === 'tools/call' && this.#options.hasEffects && !this.#options.hasEffects(tool)) {
      return { kind: 'forward', registered: false };
    }
    let fingerprint: RequestDigest;
    try {
      const { _meta: _ignored, ...rest } = params;
      fingerprint = requestDigest(this.#options.fingerprinter, message.method, rest);
    } catch {
      // Arguments that cannot be identified: the tool layer answers with IDEM_INVALID_INPUT.
      return { kind: 'forward', registered: false };
    }
    // A 2026-07-28 request names its client itself (there was no initialize).
    const clientName = this.#clientName ?? envelopeOf(message.params).clientInfo?.name;
    const actor = this.#options.actorOf({
      ...(extra?.authInfo ? { authInfo: extra.authInfo } : {}),
      ...(typeof clientName === 'string' ? { clientName } : {}),
    });
    const scope = this.#idScope();
    const session = scope === 'none' ? null : (this.sessionId ?? null);
    const key = requestKey({ actor, session, id: message.id, method: message.method, tool });
    let decision: ReceiptDecision;
    try {
      decision = this.#options.book.begin(key, fingerprint, scope !== 'none', {
        owner: actor,
        group: this.#connectionId,
      });
    } catch (error) {
      // Its canonical form is past the size limit (found only when digested): as above.
      if (error instanceof InvalidInputError) return { kind: 'forward', registered: false };
      throw error;
    }
    // The tool is named by the request and not yet looked up: bounded, as the key bounds the id.
    const event = (kind: ActivityEventInput['kind']) =>
      this.#options.onEvent?.({ kind, actor, tool: tool ? boundedText(tool) : null, requestRef: key });
    const answer = (reply: Promise<JSONRPCMessage | null>, sameIdRunning = false): Decision => ({
      kind: 'answer',
      reply: reply.then((r) => (r ? ({ ...r, id: message.id } as JSONRPCMessage) : null)),
      sameIdRunning,
    });

    switch (decision.kind) {
      case 'new':
        if (decision.idReused) event('id_reused');
        this.#pending.set(renderRequestId(message.id), {
          id: message.id,
          settle: decision.settle,
          release: decision.release,
        });
        return { kind: 'forward', registered: true };
      case 'duplicate': {
        event('receipt_hit');
        this.#options.onAnswered?.('resend');
        const running = this.#pending.get(renderRequestId(message.id));
        return answer(decision.reply, running !== undefined && running.id === message.id);
      }
      case 'id_reused':
        event('id_reused');
        this.#options.onAnswered?.('id_reused');
        return answer(
          Promise.resolve({
            jsonrpc: '2.0',
            id: message.id,
            error: {
              code: REQUEST_ID_REUSED_JSONRPC_CODE,
              message: `${IDEM_CODES.MCP_REQUEST_ID_REUSED}: request id ${JSON.stringify(message.id)} was already used in this session for a different request; nothing was run. Send a new request with a new id.`,
              data: { code: IDEM_CODES.MCP_REQUEST_ID_REUSED },
            },
          }),
        );
      case 'full':
        this.#options.onAnswered?.('full');
        return answer(
          Promise.resolve({
            jsonrpc: '2.0',
            id: message.id,
            result: idemAnswer(IDEM_CODES.IDEM_RECEIPTS_FULL),
          }),
        );
    }
  }

  /** Sends `reply` as the answer to request `id` (the resend's own id, exactly as it came). */
  async #replyTo(id: RequestId, reply: JSONRPCMessage): Promise<void> {
    try {
      await this.inner.send({ ...reply, id } as JSONRPCMessage, { relatedRequestId: id });
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
