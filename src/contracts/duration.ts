import ms from 'ms';
import { z } from 'zod';

/** `"15m"`, `"2s"`, `"48h"` or a number of milliseconds. */
export type Duration = string | number;

/** A duration as a config or a contract writes it: `"30s"`, `"15m"`, `"48h"`, or a number of milliseconds. */
export const DurationSchema = z.union([z.string(), z.number().nonnegative()]);

/** A duration as a user writes it back into a config: "48h", "15m", "30s" (a whole unit when there is one). */
export function writtenDuration(ms: number): string {
  if (ms > 0 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${ms / 1000}s`;
}

export function durationMs(value: Duration, field: string): number {
  let parsed: unknown;
  try {
    parsed = typeof value === 'number' ? value : ms(value as ms.StringValue);
  } catch {
    // `ms` throws on "" (and non-strings) with its own message, which names no field.
    parsed = undefined;
  }
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < 0) {
    throw new Error(`${field}: "${value}" is not a duration (use e.g. "30s", "15m", "48h" or milliseconds)`);
  }
  return parsed;
}
