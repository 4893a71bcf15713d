import { InvalidArgumentError } from 'commander';

import { ConfigError } from '../errors.js';

/**
 * The exit codes of every `idem` command (docs/operators.md#exit-codes), as
 * most Unix tools use them: 2 means the command line or the config is wrong and
 * nothing was attempted (fix the invocation); 1 means the command ran and
 * failed (no store, a refused resolution, a lost race, a port in use).
 * The checks — `idem lint`, `idem audit verify` — follow diff and grep instead:
 * 1 is "found something", 2 "could not check".
 */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** `idem lint` and `idem audit verify`. */
export const CHECK_EXIT = { clean: 0, found: 1, couldNotCheck: 2 } as const;

/** A command that stops early with a code of its own (a check that could not check), said on stderr. */
export class CommandExit extends Error {
  override readonly name = 'CommandExit';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/**
 * The code a failed command exits with: usage (2) for what the invocation got
 * wrong — a config that does not validate, an option value refused in an
 * action — else failed (1).
 */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommandExit) return error.exitCode;
  if (error instanceof ConfigError || error instanceof InvalidArgumentError) return EXIT.usage;
  return EXIT.failed;
}

/** `--limit <n>`: a whole number of at least 1; "abc", "-1", "2.5" and "0" are refused, not read as "no limit". */
export function parseLimit(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('Expected a whole number of at least 1, e.g. --limit 50.');
  return Number(value);
}
