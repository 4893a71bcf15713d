import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { headWithoutSecrets } from '../identity/secret-cut.js';
import { WrappedTransport } from '../support/wrapped-transport.js';

/** Characters of a message's params (or an error's message) a line shows: enough to recognise a call. */
export const TRAFFIC_EXCERPT_CHARS = 200;
/** Requests whose answer is awaited per peer, for the answer's duration: past it the oldest is forgotten. */
const MAX_OPEN_REQUESTS = 10_000;

/** Where the lines go: the operator's log at `debug`, already scrubbed of whole secrets. */
export interface TrafficSink {
  debug(message: string, fields?: Record<string, unknown>): void;
}

/** One side's messages, each said as it passes: `inbound` came from the peer, `outbound` goes to it. */
export interface TrafficTap {
  inbound(message: JSONRPCMessage, session?: string): void;
  outbound(message: JSONRPCMessage, session?: string): void;
  /**
   * Says each message `transport` sends and hands on (to the `onmessage` it has now): patched on
   * the transport itself, which stays what it was (an upstream connection asks `instanceof`).
   */
  watch(transport: Transport): void;
}

/**
 * `--log-level debug`: one line per message between Idem and a peer (a client, an upstream) —
 * its kind, method, id, session, size and, for an answer, how long after its request — so an
 * operator can follow what a client sent and what came back. The params (or an error's message)
 * are shown cut to TRAFFIC_EXCERPT_CHARS, a secret never halved by the cut (headWithoutSecrets);
 * the log itself scrubs whole ones (scrubbedLog).
 */
export class TrafficLog {
  readonly #sink: TrafficSink;
  readonly #secrets: () => readonly string[];
  readonly #clock: () => number;

  constructor(
    sink: TrafficSink,
    secrets: () => readonly string[],
    clock: () => number = () => performance.now(),
  ) {
    this.#sink = sink;
    this.#secrets = secrets;
    this.#clock = clock;
  }

  /** The lines of one connection to `peer` ("client", "upstream <name>"). */
  tap(peer: string): TrafficTap {
    const open = new Map<string, { method: string; at: number }>();
    const say = (from: string, to: string, message: JSONRPCMessage, session: string | undefined) => {
      try {
        this.#say(from, to, message, session, open);
      } catch {
        // A line that cannot be made (a message that does not serialise) must not stop the message.
      }
    };
    const tap: TrafficTap = {
      inbound: (message, session) => say(peer, 'idem', message, session),
      outbound: (message, session) => say('idem', peer, message, session),
      watch: (transport) => {
        const send = transport.send.bind(transport);
        transport.send = (message, options) => {
          tap.outbound(message, transport.sessionId);
          return send(message, options);
        };
        const receive = transport.onmessage;
        transport.onmessage = (message, extra) => {
          tap.inbound(message, transport.sessionId);
          receive?.(message, extra);
        };
      },
    };
    return tap;
  }

  #say(
    from: string,
    to: string,
    message: JSONRPCMessage,
    session: string | undefined,
    open: Map<string, { method: string; at: number }>,
  ): void {
    const m = message as {
      id?: string | number;
      method?: string;
      params?: unknown;
      error?: { code?: number; message?: string };
    };
    const bytes = Buffer.byteLength(JSON.stringify(message));
    const fields: Record<string, unknown> = {};
    let kind: string;
    let method = m.method;
    if (m.method !== undefined && m.id !== undefined) {
      kind = 'request';
      // Keyed by direction: an id the peer uses and one Idem uses are different requests.
      const key = `${from}\u0000${String(m.id)}`;
      if (open.size >= MAX_OPEN_REQUESTS) open.delete(open.keys().next().value as string);
      open.set(key, { method: m.method, at: this.#clock() });
    } else if (m.method !== undefined) kind = 'notification';
    else {
      kind = m.error ? 'error' : 'response';
      const key = `${to}\u0000${String(m.id)}`;
      const request = open.get(key);
      if (request) {
        open.delete(key);
        method = request.method;
        fields.ms = Math.round(this.#clock() - request.at);
      }
    }
    if (method !== undefined) fields.method = method;
    if (m.id !== undefined) fields.id = m.id;
    if (session !== undefined) fields.session = session;
    fields.bytes = bytes;
    if (m.error) {
      fields.code = m.error.code;
      fields.error = this.#excerpt(String(m.error.message ?? ''));
    } else if (m.params !== undefined) fields.params = this.#excerpt(JSON.stringify(m.params));
    this.#sink.debug(`${from} → ${to}: ${kind}${method ? ` ${method}` : ''}`, fields);
  }

  #excerpt(text: string): string {
    const kept = headWithoutSecrets(text, TRAFFIC_EXCERPT_CHARS, this.#secrets(), { unit: 'chars' });
    return kept.cut ? `${kept.text}…` : kept.text;
  }
}

/** A client's transport with every message said on `tap` (what arrives, and what is sent back). */
class TappedTransport extends WrappedTransport {
  readonly #tap: TrafficTap;

  constructor(inner: Transport, tap: TrafficTap) {
    super(inner);
    this.#tap = tap;
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => {
      this.#tap.inbound(message, this.sessionId);
      this.onmessage?.(message, extra);
    };
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    this.#tap.outbound(message, this.sessionId);
    return this.inner.send(message, options);
  }
}

/** `transport` with its traffic said on `traffic` as `peer`'s, or itself when nothing logs it. */
export function tapped(transport: Transport, traffic: TrafficLog | undefined, peer = 'client'): Transport {
  return traffic ? new TappedTransport(transport, traffic.tap(peer)) : transport;
}

/** Whether a log writes `debug` lines: only a log that says its level (createLog's) is tapped. */
export function logsDebug(logger: unknown): boolean {
  return (logger as { level?: unknown } | undefined)?.level === 'debug';
}
