import type { ExecutionEngine } from '../executions/engine.js';
import type { InFlight } from '../executions/in-flight.js';
import type { ServedHttp } from '../front/http-options.js';

/** What a drain came to: everything finished within the grace, or how much was still under way. */
export interface Drained {
  complete: boolean;
  /** Calls (and outcomes to record) still under way when the grace ended, at least: 0 when complete. */
  left: number;
}

/**
 * A gateway shutting down (SIGTERM, SIGINT; docs/reliability.md, "Restarts"). It takes no new
 * call — the HTTP front answers a new request or session 503 with Retry-After, and a call that
 * reaches the engine anyway (stdio) is IDEM_NOT_EXECUTED: nothing ran, its retry runs it — and
 * lets the calls under way finish: their outcomes recorded (one the store did not take, once it
 * does: late-outcome.ts) and their answers sent, for up to `graceMs`. Then the caller closes the
 * gateway; what is still under way is cut, and its execution becomes `unknown`.
 */
export async function drainGateway(
  parts: { http: ServedHttp | undefined; engine: ExecutionEngine; calls: InFlight },
  graceMs: number,
): Promise<Drained> {
  parts.http?.stopTaking();
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
  });
  const finished = Promise.all([parts.engine.drain(), parts.calls.idle()]).then(() => true as const);
  const complete = await Promise.race([finished, graceOver]);
  clearTimeout(timer);
  // A running call is counted by both; the engine also counts outcomes still to record.
  return { complete, left: complete ? 0 : Math.max(parts.engine.inFlight, parts.calls.count) };
}
