import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { MissingPackageError } from '../errors.js';
import { RESOLUTIONS } from '../executions/operator.js';
import { APPROVAL_CHANNELS, type ExecutionStore } from '../store/types.js';
import { loadPromClient } from '../support/optional-packages.js';
import { registerStoreGauges } from './store-state.js';

/**
 * The Prometheus metrics of one gateway (or console) process: one registry per
 * instance, not prom-client's global one, so two gateways in one process (the
 * tests, an embedding program) never add into each other's counts.
 * docs/metrics.md lists every name and label.
 *
 * prom-client is an optional peer (docs/adr/0038-optional-peer-packages.md): without it the same
 * metrics exist and count nothing, and there is no registry to serve.
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

/** What Idem does with each metric: counting, timing, setting. Read them through `registry`. */
type Count<L extends string = string> = Pick<Counter<L>, 'inc'>;

export interface IdemMetrics {
  /** undefined: prom-client is not installed, and nothing is counted. */
  readonly registry: Registry | undefined;
  readonly calls: Count<'answer' | 'tool'>;
  readonly claims: Count<'result'>;
  readonly unknownOutcomes: Count<'cause'>;
  readonly storeErrors: Count<'operation'>;
  readonly storeLatency: Pick<Histogram<'operation'>, 'startTimer'>;
  readonly upstreamRestarts: Count<'upstream'>;
  readonly receiptsInUse: Pick<Gauge, 'set'>;
  readonly receiptAnswers: Count<'answer'>;
  readonly leasesExpired: Count;
  readonly approvalDecisions: Count<'decision' | 'via'>;
  readonly operatorResolutions: Count<'outcome'>;
}

export interface MetricsOptions {
  receiptsInUse?: () => number;
  /** Metrics were asked for (a `metrics:` section): without prom-client, MissingPackageError instead of counting nothing. */
  required?: boolean;
  /** The store whose executions waiting on an operator are read at each scrape (store-state.ts); none: not read. */
  store?: () => ExecutionStore | undefined;
  /**
   * The registry is served (a `metrics:` or `console:` section, `idem console`): prom-client's
   * process_* and nodejs_* too. Not otherwise: they keep an event-loop monitor and a GC observer
   * running for the life of the process, for nobody to read.
   */
  processMetrics?: boolean;
}

/** The metrics of one process: prom-client's, when it is installed. */
export async function loadMetrics(options: MetricsOptions = {}): Promise<IdemMetrics> {
  try {
    return createMetrics(await loadPromClient(), options);
  } catch (error) {
    if (error instanceof MissingPackageError && !options.required) return UNCOUNTED;
    throw error;
  }
}

const NOTHING = { inc() {}, set() {}, startTimer: () => () => 0 };

/** Without prom-client: every metric there, none counting. */
const UNCOUNTED: IdemMetrics = {
  registry: undefined,
  calls: NOTHING,
  claims: NOTHING,
  unknownOutcomes: NOTHING,
  storeErrors: NOTHING,
  storeLatency: NOTHING,
  upstreamRestarts: NOTHING,
  receiptsInUse: NOTHING,
  receiptAnswers: NOTHING,
  leasesExpired: NOTHING,
  approvalDecisions: NOTHING,
  operatorResolutions: NOTHING,
};

function createMetrics(promClient: typeof import('prom-client'), options: MetricsOptions): IdemMetrics {
  const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = promClient;
  const registry = new Registry();
  const registers = [registry];
  const receiptsInUse = options.receiptsInUse;
  // CPU, memory, file descriptors, event loop lag, GC: on this registry, never the global one.
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  if (options.store) registerStoreGauges(promClient, registry, options.store);
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
            collect(this: InstanceType<typeof Gauge>) {
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
    approvalDecisions: zeroed(
      new Counter({
        name: 'idem_approval_decisions_total',
        help: 'Approval requests decided by this process: approved or denied (via cli, console, elicitation, api), or expired',
        labelNames: ['decision', 'via'],
        registers,
      }),
      [
        ...APPROVAL_CHANNELS.filter((via) => via !== 'expiry').flatMap((via) => [
          { decision: 'approved', via },
          { decision: 'denied', via },
        ]),
        { decision: 'expired', via: 'expiry' },
      ],
    ),
    operatorResolutions: zeroed(
      new Counter({
        name: 'idem_operator_resolutions_total',
        help: 'Unknown outcomes (or dispatches whose holder is gone) an operator resolved in this process, by outcome',
        labelNames: ['outcome'],
        registers,
      }),
      RESOLUTIONS.map((outcome) => ({ outcome })),
    ),
  };
}

/**
 * Every label set a counter can take, at 0 from the start: a series that first appears at 1 is
 * an increase that rate() and increase() never see.
 */
function zeroed<L extends string>(counter: Counter<L>, labelSets: Partial<Record<L, string>>[]): Counter<L> {
  for (const labels of labelSets) counter.inc(labels, 0);
  return counter;
}
