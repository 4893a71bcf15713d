import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { InitializeResult, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { WrappedTransport } from '../support/wrapped-transport.js';
import { isRequest, isResponse, isResultResponse } from './message-kind.js';
import {
  ENVELOPE,
  envelopeOf,
  hasEnvelope,
  LATEST_LEGACY_VERSION,
  MODERN_VERSIONS,
  modernResult,
} from './revisions.js';

/** A DiscoverResult (2026-07-28) saying what an InitializeResult says. */
export function discoverResultOf(
  init: InitializeResult,
  { subscriptions = false }: { subscriptions?: boolean } = {},
): Record<string, unknown> {
  // Change notifications need a subscriptions/listen stream: without one (the library's bridge)
  // listChanged and subscribe are not advertised.
  const capabilities = Object.fromEntries(
    Object.entries(init.capabilities as Record<string, unknown>)
      .filter(([key]) => key !== 'tasks')
      .map(([key, value]) => {
        if (subscriptions || !value || typeof value !== 'object') return [key, value];
        const { listChanged: _l, subscribe: _s, ...rest } = value as Record<string, unknown>;
        return [key, rest];
      }),
  );
  return {
    supportedVersions: MODERN_VERSIONS,
    capabilities,
    ...(init.instructions ? { instructions: init.instructions } : {}),
    _meta: { [ENVELOPE.serverInfo]: init.serverInfo },
  };
}

/**
 * Lets an SDK 1.x server (which knows the 2025-era revisions only) answer
 * 2026-07-28 clients, at the message level: `server/discover` reaches the
 * server as an `initialize` built from the request's envelope and its answer
 * goes back in the discover shape; the answers to other enveloped requests
 * get what that revision requires (`resultType`, cache hints). 2025-era
 * traffic passes unchanged.
 */
export class ModernBridge extends WrappedTransport {
  /** 2026-07-28 requests not yet answered: their method, by id. */
  readonly #modern = new Map<RequestId, string>();
  /** What `server/discover` advertises besides the server's own: extensions served in front of it (tasks). */
  readonly #extensions: Record<string, object>;

  constructor(inner: Transport, { extensions = {} }: { extensions?: Record<string, object> } = {}) {
    super(inner);
    this.#extensions = extensions;
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => {
      if (!isRequest(message) || !hasEnvelope(message.params)) {
        this.onmessage?.(message, extra);
        return;
      }
      this.#modern.set(message.id, message.method);
      if (message.method !== 'server/discover') {
        this.onmessage?.(message, extra);
        return;
      }
      const envelope = envelopeOf(message.params);
      this.onmessage?.(
        {
          jsonrpc: '2.0',
          id: message.id,
          method: 'initialize',
          params: {
            protocolVersion: LATEST_LEGACY_VERSION,
            capabilities: envelope.clientCapabilities ?? {},
            clientInfo: {
              name: envelope.clientInfo?.name ?? 'unknown',
              version: envelope.clientInfo?.version ?? '',
            },
          },
        },
        extra,
      );
    };
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const id = (message as { id?: RequestId }).id;
    const method = id === undefined ? undefined : this.#modern.get(id);
    if (method === undefined || !isResponse(message)) return this.inner.send(message, options);
    this.#modern.delete(id as RequestId);
    if (!isResultResponse(message)) return this.inner.send(message, options);
    const result =
      method === 'server/discover'
        ? this.#discoverResult(message.result as InitializeResult)
        : (message.result as Record<string, unknown>);
    return this.inner.send({ ...message, result: modernResult(method, result) } as JSONRPCMessage, options);
  }

  #discoverResult(init: InitializeResult): Record<string, unknown> {
    const result = discoverResultOf(init);
    if (Object.keys(this.#extensions).length === 0) return result;
    const capabilities = result.capabilities as Record<string, unknown>;
    capabilities.extensions = {
      ...(capabilities.extensions as object | undefined),
      ...structuredClone(this.#extensions),
    };
    return result;
  }
}
