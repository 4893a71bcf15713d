import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

/**
 * A transport in front of another (receipts, the 2026-07-28 bridge, the library's tasks): its
 * start, close, session id and protocol-version hook are the inner transport's, so each wrapper
 * writes only what it changes — what it sends and what it hands on.
 */
export abstract class WrappedTransport<Inner extends Transport = Transport> implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  protected readonly inner: Inner;

  constructor(inner: Inner) {
    this.inner = inner;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  get setProtocolVersion(): ((version: string) => void) | undefined {
    return this.inner.setProtocolVersion?.bind(this.inner);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  abstract send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void>;
}
