import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  FetchLike,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { messageOf } from '../../errors.js';
import { isRequest } from '../../protocol/message-kind.js';
import { isHandshake } from './revision.js';
import type { HttpTransportKind } from './upstream-spec.js';

/** What an HTTP upstream's transport is made of. */
export interface HttpUpstreamTarget {
  url: URL;
  headers?: Record<string, string>;
  /** Streamable HTTP's fetch (per-request headers, related streams); SSE uses the platform's. */
  fetch: FetchLike;
}

/** The transport to an HTTP upstream, of the kind given (the `transport:` of its config). */
export function httpUpstreamTransport(target: HttpUpstreamTarget, kind: HttpTransportKind): Transport {
  if (kind === 'streamable_http') return streamable(target);
  if (kind === 'sse') return new SseUpstreamTransport(target);
  return new DetectingHttpTransport(target);
}

/** Whether the transport speaks Streamable HTTP (each response rides its own request's stream). */
export function speaksStreamableHttp(transport: Transport): boolean {
  if (transport instanceof DetectingHttpTransport) return transport.streamable;
  return transport instanceof StreamableHTTPClientTransport;
}

/**
 * Neither transport answered: the Streamable HTTP POST was refused (4xx) and the SSE GET failed
 * too. Nothing was delivered; the message names both attempts and the URL.
 */
export class NoHttpTransportError extends Error {
  override readonly name = 'NoHttpTransportError';
}

function streamable(target: HttpUpstreamTarget): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(target.url, {
    ...(target.headers ? { requestInit: { headers: target.headers } } : {}),
    fetch: target.fetch,
  });
}

/**
 * The SDK's SSE client transport, with one change: the event stream is the session (an SSE server
 * keeps none beyond it), so a stream that breaks closes the transport — the connection then
 * restarts and initializes again — instead of letting the SDK's EventSource reconnect to a new,
 * uninitialized session and POST there as if nothing had happened.
 */
class SseUpstreamTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  readonly #sse: SSEClientTransport;
  #started = false;
  #closed = false;

  constructor(target: HttpUpstreamTarget) {
    this.#sse = new SSEClientTransport(target.url, {
      ...(target.headers ? { requestInit: { headers: target.headers } } : {}),
    });
    this.#sse.onmessage = (message) => this.onmessage?.(message);
    this.#sse.onerror = (error) => {
      if (this.#started && error instanceof SseError) {
        void this.close();
        return;
      }
      this.onerror?.(error);
    };
    this.#sse.onclose = () => {
      if (this.#closed) return;
      this.#closed = true;
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return undefined;
  }

  async start(): Promise<void> {
    await this.#sse.start();
    this.#started = true;
  }

  send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    return this.#sse.send(message);
  }

  setProtocolVersion(version: string): void {
    this.#sse.setProtocolVersion(version);
  }

  close(): Promise<void> {
    return this.#sse.close();
  }
}

/**
 * Streamable HTTP first; if the server has no POST there (404 or 405, what an SSE-only server
 * answers), the 2024-11-05 SSE transport at the same URL (a GET for its event stream), as the
 * SDK's client fallback does. Another 4xx is a Streamable server refusing the handshake (a 400 for
 * a `server/discover` it does not know): its GET would open a stream that never names an
 * endpoint, so it is that server's answer, not a reason to fall back. Decided once per transport, on a handshake only: a message with effects is never
 * sent twice to find out. When both fail, the error names both attempts and the URL.
 */
class DetectingHttpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  readonly #target: HttpUpstreamTarget;
  #active: Transport;
  #decided = false;
  #protocolVersion: string | undefined;

  constructor(target: HttpUpstreamTarget) {
    this.#target = target;
    this.#active = this.#adopt(streamable(target));
  }

  /** False once it fell back to SSE. */
  get streamable(): boolean {
    return this.#active instanceof StreamableHTTPClientTransport;
  }

  get sessionId(): string | undefined {
    return this.#active.sessionId;
  }

  start(): Promise<void> {
    return this.#active.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.#decided || !isRequest(message) || !isHandshake(message.method))
      return this.#active.send(message, options);
    try {
      await this.#active.send(message, options);
      this.#decided = true;
      return;
    } catch (error) {
      if (!(error instanceof StreamableHTTPError) || !hasNoPost(error.code)) throw error;
      await this.#fallBack(error);
    }
    await this.#active.send(message, options);
  }

  setProtocolVersion(version: string): void {
    this.#protocolVersion = version;
    this.#active.setProtocolVersion?.(version);
  }

  close(): Promise<void> {
    return this.#active.close();
  }

  /** The POST was refused: the same URL as an SSE server, or an error naming both attempts. */
  async #fallBack(refused: StreamableHTTPError): Promise<void> {
    const sse = new SseUpstreamTransport(this.#target);
    try {
      await startedWithin(sse, SSE_ENDPOINT_WITHIN_MS);
    } catch (error) {
      await sse.close().catch(() => {});
      throw new NoHttpTransportError(
        `${this.#target.url.href} speaks neither MCP HTTP transport: Streamable HTTP (POST) answered HTTP ${refused.code} (${messageOf(refused)}); HTTP+SSE (GET, the 2024-11-05 transport) failed: ${messageOf(error)}`,
      );
    }
    const streamableOne = this.#active;
    this.#active = this.#adopt(sse);
    this.#decided = true;
    if (this.#protocolVersion) sse.setProtocolVersion(this.#protocolVersion);
    streamableOne.onclose = undefined;
    await streamableOne.close().catch(() => {});
  }

  #adopt(transport: Transport): Transport {
    transport.onmessage = (message, extra) => this.onmessage?.(message, extra);
    transport.onerror = (error) => this.onerror?.(error);
    transport.onclose = () => this.onclose?.();
    return transport;
  }
}

/** No POST at this URL: not found, or the method not allowed. */
function hasNoPost(status: number | undefined): boolean {
  return status === 404 || status === 405;
}

/** How long the fallback waits for an SSE server's `endpoint` event before it gives up on the URL. */
const SSE_ENDPOINT_WITHIN_MS = 15_000;

/** `start` of an SSE transport, bounded: a stream that opens but never names its endpoint is no SSE server. */
async function startedWithin(transport: Transport, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no endpoint event within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([transport.start(), late]);
  } finally {
    clearTimeout(timer);
  }
}
