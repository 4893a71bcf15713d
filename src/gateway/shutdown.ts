import type { ExecutionEngine } from '../executions/engine.js';
import type { InFlight } from '../executions/in-flight.js';
import type { ServedHttp } from '../front/http-options.js';

/**
 * Once the engine's part is done, how long the answers of what finished may take to be sent: a
 * moment (they are on their way); a call still unanswered past it waits on what no closing
 * process waits for (its target's own task, which the next gateway follows).
 */
export const ANSWERS_WITHIN_MS = 2_000;

/** What a drain came to: everything finished within the grace, or how much was still under way. */
export interface Drained {
  complete: boolean;
  /** Calls (and outcomes to record) still under way when the grace ended: 0 when complete. */
  left: number;
}

/**
 * A gateway shutting down (SIGTERM, SIGINT; docs/reliability.md, "Restarts and a store that
 * blinks"). It takes no new call — the HTTP front answers a new request or session 503 with
 * Retry-After, and a call that reaches the engine anyway (stdio) is IDEM_NOT_EXECUTED: nothing
 * ran, its retry runs it — and lets the calls under way finish: their outcomes recorded (one the
 * store did not take, once it does: late-outcome.ts) and their answers sent, for up to `graceMs`.
 * Then the caller closes the gateway; what is still under way is cut, and its execution becomes
 * `unknown` — but for a call following its target's own task, which the next gateway follows.
 */
export async function drainGateway(
  parts: { http: ServedHttp | undefined; engine: ExecutionEngine; calls: InFlight },
  graceMs: number,
): Promise<Drained> {
  parts.http?.stopTaking();
  const started = performance.now();
  const complete = await parts.engine.drain(graceMs);
  const left = Math.max(0, graceMs - (performance.now() - started));
  await within(parts.calls.idle(), Math.min(left, ANSWERS_WITHIN_MS));
  return { complete, left: complete ? 0 : parts.engine.inFlight };
}

function within(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
