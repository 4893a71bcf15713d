import type { Logger } from '../executions/call.js';
import type { KnownSecrets } from '../identity/redaction.js';
import { type Log, scrubbedLog } from '../support/log.js';

/** The gateway's log: the given logger (its optional levels as no-ops), scrubbed of the known secrets. */
export function gatewayLog(logger: Logger | undefined, secrets: KnownSecrets): Log {
  return scrubbedLog(
    {
      error: (message, fields) => logger?.error(message, fields),
      warn: (message, fields) => logger?.warn(message, fields),
      info: (message, fields) => logger?.info?.(message, fields),
      debug: (message, fields) => logger?.debug?.(message, fields),
    },
    (value) => secrets.redact(value),
  );
}

/** A key file option, only when one is named. */
export function keyFile(path: string | undefined): { keyFile?: string } {
  return path ? { keyFile: path } : {};
}
