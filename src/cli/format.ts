import { durationMs } from '../contracts/duration.js';

/** Output helpers shared by the operator commands: aligned tables for people, JSON for scripts. */

/**
 * JSON for scripts. Times are ISO 8601 in UTC (`2026-12-01T20:06:08.123Z`), the
 * instants the tables show: the stores keep milliseconds since the epoch, which
 * a reader would have to convert, and could mistake for a duration.
 */
export function printJson(value: unknown): void {
  process.stdout.write(
    `${JSON.stringify(value, (key, v: unknown) => (isTimeKey(key) ? isoTime(v) : v), 2)}\n`,
  );
}

/** The names the stores, journals and reports give their times: `at`, `started`, `ended` and `…At`. */
function isTimeKey(key: string): boolean {
  return key === 'at' || key === 'started' || key === 'ended' || /[a-z]At$/.test(key);
}

function isoTime(value: unknown): unknown {
  if (typeof value !== 'number') return value;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

/** Left-aligned columns, a header row, no borders — readable in any terminal and easy to grep. */
export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(headers)}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
  if (rows.length === 0) process.stdout.write('(none)\n');
}

/** A time in a table: UTC, said so by its `Z` (RFC 3339 with a space), to the millisecond like --json. */
export function time(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString().replace('T', ' ');
}

/** `--since 2h` (a duration back from now, as in contracts) or an ISO date. */
export function parseSince(value: string, now = Date.now()): number {
  if (/^\d/.test(value) && !/^\d{4}-/.test(value)) {
    try {
      return now - durationMs(value, '--since');
    } catch {
      // not a duration: try a date below
    }
  }
  const parsed = Date.parse(value);
  if (Number.isNaN(parsed))
    throw new Error(`--since ${value}: expected a duration like 30m, 2h, 7d or an ISO date`);
  return parsed;
}
