import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The Prometheus metrics of one gateway (or console) process: one registry per
 * instance, not prom-client's global one, so two gateways in one process (the
 * tests, an embedding program) never add into each other's counts.
 * docs/console.md lists every name and label.
 */

/** How a tool call was answered: the `answer` label of idem_calls_total. */
export const CALL_ANSWERS = [
  /** The action ran for this call (its result, success or a tool error). */
  'executed',
  /** The stored result of an earlier execution: nothing ran again. */
  'replayed',
  /** Already running, or queued for / past an approval: not started a second time. */
  'in_flight',
  'awaiting_approval',
  'approved',
  /** Sent, outcome unknown. */
  'unknown',
  /** Unknown outcome of an irreversible tool: an operator must resolve it. */
  'review',
  'denied',
  /** Nothing ran; safe to retry (the store could not record the intent). Receipts full: idem_receipt_answers_total. */
  'not_executed',
  /** Refused before anything ran: bad arguments, a key naming another action, a missing scope. */
  'refused',
] as const;
export type CallAnswer = (typeof CALL_ANSWERS)[number];

export interface IdemMetrics {
  readonly registry: Registry;
  readonly calls: Counter<'answer' | 'tool'>;
  readonly claims: Counter<'result'>;
  readonly unknownOutcomes: Counter<'cause'>;
  readonly storeErrors: Counter<'operation'>;
  readonly storeLatency: Histogram<'operation'>;
  readonly upstreamRestarts: Counter<'upstream'>;
  readonly receiptsInUse: Gauge;
  readonly receiptAnswers: Counter<'answer'>;
  readonly leasesExpired: Counter;
}

export function createMetrics(options: { receiptsInUse?: () => number } = {}): IdemMetrics {
  const registry = new Registry();
  const registers = [registry];
  const receiptsInUse = options.receiptsInUse;
  return {
    registry,
    calls: new Counter({
      name: 'idem_calls_total',
      help: 'Side-effecting tool calls, by how they were answered (replays are answer="replayed")',
      labelNames: ['answer', 'tool'],
      registers,
    }),
    claims: new Counter({
      name: 'idem_claims_total',
      help: 'Claims of an intent in the store: won (a new execution) or lost (another execution holds it)',
      labelNames: ['result'],
      registers,
    }),
    unknownOutcomes: new Counter({
      name: 'idem_unknown_outcomes_total',
      help: 'Executions that became unknown: the dispatch went out and no answer can be trusted',
      labelNames: ['cause'],
      registers,
    }),
    storeErrors: new Counter({
      name: 'idem_store_errors_total',
      help: 'Store operations that failed (unavailable or erroring)',
      labelNames: ['operation'],
      registers,
    }),
    storeLatency: new Histogram({
      name: 'idem_store_operation_seconds',
      help: 'Time each store operation took',
      labelNames: ['operation'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    upstreamRestarts: new Counter({
      name: 'idem_upstream_restarts_total',
      help: 'Restarts of an upstream MCP server (whatever state it held is gone)',
      labelNames: ['upstream'],
      registers,
    }),
    receiptAnswers: new Counter({
      name: 'idem_receipt_answers_total',
      help:
        'Requests the receipt layer answered itself, never reaching a tool: resend (a repeated request id, ' +
        "given the first request's reply), id_reused (MCP_REQUEST_ID_REUSED), full (IDEM_RECEIPTS_FULL)",
      labelNames: ['answer'],
      registers,
    }),
    receiptsInUse: new Gauge({
      name: 'idem_receipts_in_use',
      help: 'Request receipts held in memory right now',
      registers,
      ...(receiptsInUse
        ? {
            collect(this: Gauge) {
              this.set(receiptsInUse());
            },
          }
        : {}),
    }),
    leasesExpired: new Counter({
      name: 'idem_leases_expired_total',
      help: 'Dispatches whose holder is gone (lease or deadline passed), found by the sweeper',
      registers,
    }),
  };
}
