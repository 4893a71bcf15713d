import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { PerRequestHttp } from '../../protocol/standard-headers.js';
import type { UpstreamReply } from './upstream-spec.js';

interface Pending {
  resolve(reply: UpstreamReply): void;
  reject(error: Error): void;
}

/**
 * The requests a connection sent and still awaits an answer to, under the ids
 * it numbered them with (its own space, not the client's), and what each adds
 * to its own HTTP POST (its `Mcp-Param-*` headers, its stream's abort).
 */
export class PendingRequests {
  #nextId = 1;
  readonly #pending = new Map<RequestId, Pending>();
  readonly #http = new Map<RequestId, PerRequestHttp>();

  /** A new id and the promise of its answer, settled by `answer`, `fail` or `failAll`. */
  open(http: PerRequestHttp | undefined): { id: number; reply: Promise<UpstreamReply> } {
    const id = this.#nextId++;
    const reply = new Promise<UpstreamReply>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    // The upstream may go away while the request is still being written: then `reply` is rejected
    // before anyone awaits it, and an unobserved rejection would end the gateway process.
    reply.catch(() => {});
    if (http) this.#http.set(id, http);
    void reply.finally(() => this.#http.delete(id)).catch(() => {});
    return { id, reply };
  }

  /** A request that could not be sent: no answer will come, and its caller is told by the send's own error. */
  forget(id: RequestId): void {
    this.#pending.delete(id);
    this.#http.delete(id);
  }

  httpOf(id: RequestId): PerRequestHttp | undefined {
    return this.#http.get(id);
  }

  /** Settles request `id` with `reply`; false when no such request waits (answered, cancelled, or not ours). */
  /**
   * Once `signal` aborts, request `id` is answered "cancelled" here (-32800: no answer is awaited
   * any more), after `tell` has told the upstream why.
   */
  cancelOnAbort(id: RequestId, signal: AbortSignal, tell: (reason: string) => void): void {
    const cancel = () => {
      tell(String(signal.reason ?? 'cancelled'));
      this.answer(id, { jsonrpc: '2.0', id, error: { code: -32800, message: 'Request cancelled' } });
    };
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
  }

  answer(id: RequestId, reply: UpstreamReply): boolean {
    const pending = this.#pending.get(id);
    if (!pending) return false;
    this.#pending.delete(id);
    pending.resolve(reply);
    return true;
  }

  /** Ends request `id` with `error`; false when no such request waits. */
  fail(id: RequestId, error: Error): boolean {
    const pending = this.#pending.get(id);
    if (!pending) return false;
    this.#pending.delete(id);
    pending.reject(error);
    return true;
  }

  /** Ends every request still waiting (the upstream went away, or the connection is closed). */
  failAll(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}
