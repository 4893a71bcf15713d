import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Charge {
  charge_id: string;
  order_id: string;
  amount_cents: number;
  currency: string;
}

/**
 * A payment processor on loopback for the demo and tests: the far side of the
 * boundary. It honours `Idempotency-Key` like real processors do, is as slow
 * as it is told to be, and counts what reached it — `requests` (every POST)
 * and `charges` (money actually moved).
 */
export class PaymentProcessor {
  requests = 0;
  charges = 0;
  /** Milliseconds each charge takes. */
  delayMs = 0;
  /** When set, each charge also waits for it (a test holds the processor, then lets it go). */
  hold: Promise<void> | undefined;
  /**
   * Lose the answer to the next charge: it is made and counted, then the
   * connection is cut before the answer is written (a response lost on the
   * way back; the caller cannot know whether it was charged).
   */
  loseNextAnswer = false;
  /** Who waits for the count to reach a number (chargesReach), checked at every charge. */
  readonly #countWaiters: { count: number; resolve: () => void }[] = [];
  /** The Idempotency-Key of each POST, in order (undefined: none sent). */
  readonly keys: (string | undefined)[] = [];
  /** Every request's headers, so a test can check what reached the far side. */
  readonly headers: Record<string, string | string[] | undefined>[] = [];

  /** `honoursKeys: false`: a processor that ignores Idempotency-Key and charges every POST. */
  constructor(readonly options: { honoursKeys?: boolean } = {}) {}
  readonly #byKey = new Map<string, Promise<Charge>>();
  #server: Server | undefined;

  /**
   * Holds every charge (new and already waiting) until the returned function
   * is called: a scenario decides when the processor answers by what the agent
   * has seen, not by a delay raced against a timeout.
   */
  holdCharges(): () => void {
    let release: () => void = () => {};
    this.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    return () => {
      this.hold = undefined;
      release();
    };
  }

  /** Resolves once the processor has counted `count` charges in all (at once if it has). */
  chargesReach(count: number): Promise<void> {
    if (this.charges >= count) return Promise.resolve();
    return new Promise((resolve) => this.#countWaiters.push({ count, resolve }));
  }

  /** Listens on 127.0.0.1 (port 0: any free port); resolves with its base URL. */
  async start(port = 0): Promise<string> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.headers.push({ ...req.headers });
        const lose = this.loseNextAnswer && req.method === 'POST';
        if (lose) this.loseNextAnswer = false;
        this.#handle(
          req.method ?? 'GET',
          req.url ?? '/',
          req.headers['idempotency-key'],
          Buffer.concat(chunks),
        )
          .then(({ status, body }) => {
            if (lose) return void res.destroy();
            res.writeHead(status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(body));
          })
          .catch((error: unknown) => {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: String(error) }));
          });
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  async #handle(
    method: string,
    url: string,
    key: string | string[] | undefined,
    body: Buffer,
  ): Promise<{ status: number; body: unknown }> {
    const lookup = /^\/charges\/([^/]+)$/.exec(url);
    if (method === 'GET' && lookup) {
      const found = this.#byKey.get(decodeURIComponent(lookup[1] as string));
      return found ? { status: 200, body: await found } : { status: 404, body: { error: 'no such charge' } };
    }
    if (method !== 'POST' || url !== '/charges') return { status: 404, body: { error: 'not found' } };
    this.requests++;
    this.keys.push(typeof key === 'string' ? key : undefined);
    const honours = this.options.honoursKeys ?? true;
    if (honours && (typeof key !== 'string' || key.length === 0)) {
      return { status: 400, body: { error: 'Idempotency-Key header is required' } };
    }
    const existing = honours ? this.#byKey.get(key as string) : undefined;
    if (existing) return { status: 200, body: await existing };
    const input = JSON.parse(body.toString('utf8')) as {
      order_id: string;
      amount_cents: number;
      currency: string;
    };
    const charge = (async (): Promise<Charge> => {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      await this.hold;
      this.charges++;
      for (const waiter of this.#countWaiters.filter((w) => this.charges >= w.count)) {
        this.#countWaiters.splice(this.#countWaiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      return {
        charge_id: `ch_${this.charges}`,
        order_id: input.order_id,
        amount_cents: input.amount_cents,
        currency: input.currency,
      };
    })();
    if (honours) this.#byKey.set(key as string, charge);
    return { status: 201, body: await charge };
  }
}
