import type { UpstreamLifecycle, UpstreamRestart } from '../../dispatch/mcp/index.js';
import type { SkippedLine } from '../../dispatch/mcp/stdout-lines.js';
import { excerpt, type Log } from '../../support/log.js';

/** Where an upstream event happened: the upstream, and the client session whose connection it is (null: shared). */
export interface UpstreamPlace {
  upstream: string;
  session: string | null;
}

/**
 * The operator's lines about upstreams: every start, exit, restart and
 * failure to start, and every stdout line skipped, with the upstream's name
 * (DESIGN §6: an upstream that dies costs only its own tools, and says so).
 */
export function logUpstreamLifecycle(log: Log, place: UpstreamPlace, event: UpstreamLifecycle): void {
  const fields = { upstream: place.upstream, session: place.session };
  if (event.kind === 'started') {
    const pid = event.pid === undefined ? '' : ` (pid ${event.pid})`;
    log.info(`upstream ${place.upstream} started${pid}`, {
      ...fields,
      attempt: event.attempt,
      era: event.era,
    });
    return;
  }
  const retry = event.retryInMs === undefined ? '' : `; retrying in ${event.retryInMs} ms`;
  if (event.kind === 'down')
    log.warn(`upstream ${place.upstream} went down: ${event.reason}${retry}`, fields);
  else
    log.error(
      `upstream ${place.upstream} could not be started: ${event.reason}${retry}; its tools are unavailable until it starts`,
      fields,
    );
}

export function logUpstreamRestart(log: Log, place: UpstreamPlace, restart: UpstreamRestart): void {
  log.info(
    `upstream ${place.upstream} restarted (attempt ${restart.attempt}, after ${restart.delayMs} ms): ${restart.reason}`,
    { upstream: place.upstream, session: place.session },
  );
}

/**
 * A stdout line that is not JSON-RPC: said with a bounded excerpt. It may hold
 * anything, so `scrub` (the configured credentials) runs on the whole line
 * before it is cut — a secret cut in two would escape scrubbing.
 */
export function logSkippedLine(
  log: Log,
  scrub: (text: string) => string,
  place: UpstreamPlace,
  skipped: SkippedLine,
): void {
  const what = skipped.reason === 'not_json' ? 'not JSON' : 'JSON but not a JSON-RPC message';
  log.warn(`upstream ${place.upstream} wrote a line on stdout that is ${what}; skipped it`, {
    upstream: place.upstream,
    session: place.session,
    bytes: skipped.bytes,
    line: excerpt(scrub(skipped.line)),
  });
}
