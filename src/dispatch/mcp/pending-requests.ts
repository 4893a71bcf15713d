import type { JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { UpstreamClosedError } from '../../errors.js';
import type { PerRequestHttp } from '../../protocol/standard-headers.js';
import type { UpstreamAsks, UpstreamReply } from './upstream-spec.js';

interface Pending {
  resolve(reply: UpstreamReply): void;
  reject(error: Error): void;
}

/**
 * The requests a connection sent and still awaits an answer to, under the ids
 * it numbered them with (its own space, not the client's), what each adds to
 * its own HTTP POST (its `Mcp-Param-*` headers, its stream's abort), and who
 * answers what the upstream asks while it runs (UpstreamAsks).
 */
export class PendingRequests {
  #nextId = 1;
  readonly #pending = new Map<RequestId, Pending>();
  readonly #http = new Map<RequestId, PerRequestHttp>();
  readonly #asks = new Map<RequestId, UpstreamAsks>();
  /** Requests the upstream was told are cancelled, still awaiting the answer it may send all the same. */
  readonly #told = new Set<RequestId>();

  /** A new id and the promise of its answer, settled by `answer`, `fail` or `failAll`. */
  open(http: PerRequestHttp | undefined, asks?: UpstreamAsks): { id: number; reply: Promise<UpstreamReply> } {
    const id = this.#nextId++;
    const reply = new Promise<UpstreamReply>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    // The upstream may go away while the request is still being written: then `reply` is rejected
    // before anyone awaits it, and an unobserved rejection would end the gateway process.
    reply.catch(() => {});
    if (http) this.#http.set(id, http);
    if (asks) this.#asks.set(id, asks);
    void reply
      .finally(() => {
        this.#http.delete(id);
        this.#asks.delete(id);
        this.#told.delete(id);
      })
      .catch(() => {});
    return { id, reply };
  }

  /** A request that could not be sent: no answer will come, and its caller is told by the send's own error. */
  forget(id: RequestId): void {
    this.#pending.delete(id);
    this.#http.delete(id);
    this.#asks.delete(id);
  }

  httpOf(id: RequestId): PerRequestHttp | undefined {
    return this.#http.get(id);
  }

  /**
   * Once `signal` aborts, `tell` tells the upstream why. Then, by default, no answer is awaited
   * any more: request `id` ends here with UpstreamClosedError — never with an answer made up here,
   * which a caller would take for the upstream's. With `answerWithinMs`, an answer the upstream
   * sends all the same within that time is still the request's (a call it took may have acted, and
   * its answer says how); past it, the request ends the same way.
   */
  cancelOnAbort(
    id: RequestId,
    signal: AbortSignal,
    tell: (reason: string) => void,
    answerWithinMs?: number,
  ): void {
    const cancel = () => {
      const reason = signal.reason as { message?: unknown } | undefined;
      tell(typeof reason?.message === 'string' ? reason.message : String(reason ?? 'cancelled'));
      const stop = () =>
        this.fail(
          id,
          new UpstreamClosedError('the request was cancelled, and no answer is awaited any more'),
        );
      if (answerWithinMs === undefined) return stop();
      this.#told.add(id);
      const timer = setTimeout(
        () =>
          this.fail(
            id,
            new UpstreamClosedError(
              `the request was cancelled, and the upstream did not answer within ${answerWithinMs} ms`,
            ),
          ),
        answerWithinMs,
      );
      timer.unref();
    };
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
  }

  /**
   * What the upstream asks on behalf of one of these requests, answered by that request's own
   * asker when it takes it (a reply), else undefined: routed as any. Which request: the one whose
   * response stream carried it (`related`), or — where nothing can say (stdio) — the one request
   * still running here, if there is exactly one (one told of its cancel no longer asks anything).
   */
  asked(request: JSONRPCRequest, related: RequestId | null | undefined): Promise<UpstreamReply> | undefined {
    if (this.#asks.size === 0 || related === null) return undefined;
    let owner = related;
    if (owner === undefined) {
      const running = [...this.#pending.keys()].filter((id) => !this.#told.has(id));
      owner = running.length === 1 ? running[0] : undefined;
    }
    const asks = owner === undefined ? undefined : this.#asks.get(owner);
    try {
      return asks?.(request);
    } catch (error) {
      // Never out of the connection's read loop: the upstream gets the error as its answer.
      return Promise.reject(error);
    }
  }

  /** Settles request `id` with `reply`; false when no such request waits (answered, cancelled, or not ours). */
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
