import type {
  ClaimResult,
  DecideApprovalInput,
  DecideApprovalResult,
  ExecutionStore,
  SweepResult,
  TransitionInput,
} from '../store/types.js';
import type { IdemMetrics } from './metrics.js';
import { spanForStep } from './tracing.js';

/**
 * The store as the gateway uses it, measured at its boundary: every
 * operation's latency and failures, and the events that only the store sees
 * happen — a claim won or lost, an execution becoming `unknown`, a lease found
 * expired, an approval decided, an outcome resolved by an operator. Counting here (one place) instead of at each caller means a new
 * caller is counted without anyone remembering to.
 */
export function measuredStore(store: ExecutionStore, metrics: IdemMetrics): ExecutionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'close') {
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return (...args: unknown[]) => measure(metrics, property, () => value.apply(target, args), args);
    },
  });
}

/**
 * Runs one store operation, timed and traced. A method that answers at once
 * (not a promise: a setting read off the handle, no round trip) is passed
 * through as it is, unmeasured: wrapping it would turn its value into a promise.
 */
function measure(metrics: IdemMetrics, operation: string, run: () => unknown, args: unknown[]): unknown {
  const stop = metrics.storeLatency.startTimer({ operation });
  const span = spanFor(operation, args);
  const failed = (error: unknown): never => {
    metrics.storeErrors.inc({ operation });
    span?.recordFailure(error);
    stop();
    span?.end();
    throw error;
  };
  let pending: unknown;
  try {
    pending = run();
  } catch (error) {
    // As the store's async methods fail: a rejection, never a throw at the call.
    return Promise.resolve().then(() => failed(error));
  }
  if (!(pending instanceof Promise)) {
    span?.end();
    return pending;
  }
  return pending.then((result) => {
    observe(metrics, operation, args, result);
    stop();
    span?.end();
    return result;
  }, failed);
}

/** The claim and the outcome are steps of a call's trace (receive → claim → dispatch → outcome). */
function spanFor(operation: string, args: unknown[]) {
  if (operation === 'claim') return spanForStep('claim', (args[0] as { id: string }).id);
  if (operation === 'transition') {
    const input = args[0] as TransitionInput;
    if (input.outcome !== undefined || input.to === 'unknown') return spanForStep('outcome', input.id);
  }
  return undefined;
}

function observe(metrics: IdemMetrics, operation: string, args: unknown[], result: unknown): void {
  if (operation === 'claim') {
    metrics.claims.inc({ result: (result as ClaimResult).won ? 'won' : 'lost' });
  } else if (operation === 'decideApproval') {
    const input = args[0] as DecideApprovalInput;
    if ((result as DecideApprovalResult).decided)
      metrics.approvalDecisions.inc({ decision: input.decision, via: input.via });
  } else if (operation === 'transition') {
    const input = args[0] as TransitionInput;
    if (result === undefined) return;
    // resolveExecution (executions/operator.ts) journals the operator's resolution with the change.
    if (input.events?.some((e) => e.kind === 'operator_resolution'))
      metrics.operatorResolutions.inc({ outcome: input.to });
    if (input.to !== 'unknown') return;
    const expired = input.events?.some((e) => e.kind === 'lease_expired') ?? false;
    metrics.unknownOutcomes.inc({ cause: expired ? 'lease_expired' : 'no_answer' });
    if (expired) metrics.leasesExpired.inc();
  } else if (operation === 'sweep') {
    if ((args[0] as { dryRun?: boolean }).dryRun) return;
    const { expired } = result as SweepResult;
    if (expired.length === 0) return;
    metrics.unknownOutcomes.inc({ cause: 'lease_expired' }, expired.length);
    metrics.leasesExpired.inc(expired.length);
  }
}
