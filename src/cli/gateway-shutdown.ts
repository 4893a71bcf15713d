import type { Drained } from '../gateway/shutdown.js';
import type { Log } from '../support/log.js';

/**
 * How `idem gateway` stops (docs/reliability.md, "Restarts"). The first SIGTERM or SIGINT — or,
 * on the stdio front, its client going (stdin ended, stdout closed), which is how an MCP client
 * stops a server before it signals — drains: no new calls (HTTP 503, IDEM_NOT_EXECUTED), and the
 * calls under way finish, are recorded and answered within `shutdown_grace`. Then the gateway
 * closes and exits: 0 when everything finished, 1 when the grace ended first (what was cut is
 * `unknown`). A second signal exits at once (128 + its number), recording nothing more: what is
 * under way is left to become `unknown`, as after a kill.
 */
export function stopGracefully(options: {
  drain(graceMs: number): Promise<Drained>;
  /** Closes what the gateway holds and exits with `code`. */
  stop(code: number): Promise<void>;
  graceMs: number;
  log: Log;
  /** Said whatever the log level (how the gateway says where it listens). */
  announce(message: string): void;
}): { shutdown(why: string): void } {
  const { drain, stop, graceMs, log, announce } = options;
  let draining = false;
  let signalled = false;
  const shutdown = (why: string) => {
    if (draining) return;
    draining = true;
    announce(
      `${why}: taking no new calls; the calls under way have up to ${graceMs / 1000} s (shutdown_grace) to finish and be recorded`,
    );
    void drain(graceMs).then(
      (drained) => {
        if (!drained.complete)
          log.warn(
            `shutdown_grace ended with ${drained.left} call(s) or outcome(s) still under way: they are cut, and their executions become unknown`,
          );
        return stop(drained.complete ? 0 : 1);
      },
      (error: unknown) => {
        log.error('the drain failed; closing now', { error: String(error) });
        return stop(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn(`${signal} again: exiting now; what is under way becomes unknown`);
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    signalled = true;
    shutdown(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { shutdown };
}
