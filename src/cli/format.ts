import { durationMs } from '../contracts/duration.js';

/** Output helpers shared by the operator commands: aligned tables for people, JSON for scripts. */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
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

export function time(ms: number | null | undefined): string {
  return ms === null || ms === undefined
    ? '-'
    : new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
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
