/**
 * How the console writes times, durations and JSON: pure functions of their
 * inputs (the clock is passed in), so a page says the same on any machine.
 */

/** `2026-12-03 12:31:05.123 UTC`: the zone said, to the millisecond, the same for every operator. */
export function isoTime(ms: number): string {
  return `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

/** `12:31:05.123`: a time within a page that already says its day and zone. */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/** A span in the largest unit that keeps it readable: `850 ms`, `1.25 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`. */
export function duration(ms: number): string {
  const abs = Math.max(0, Math.round(ms));
  if (abs < 1000) return `${abs} ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(abs < 10_000 ? 2 : 1)} s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const m = Math.floor(s / 60);
  if (m < 24 * 60) return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`;
  const h = Math.floor(m / 60);
  return `${Math.floor(h / 24)} d${h % 24 ? ` ${h % 24} h` : ''}`;
}

/** `3 min ago`, `in 10 min`, `just now`: coarse on purpose (the exact time stands beside it). */
export function relative(ms: number, now: number): string {
  const delta = now - ms;
  const abs = Math.abs(delta);
  if (abs < 1000) return 'just now';
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  const [size, unit] = units.find(([size]) => abs >= size) ?? [1000, 's'];
  const n = Math.floor(abs / size);
  return delta >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}

/**
 * A stored text as indented JSON when it is JSON, else as it is. Arguments
 * previews are bounded (a long one is cut, and so no longer parses): those stay one line.
 */
export function prettyJson(text: string): { text: string; json: boolean } {
  try {
    return { text: JSON.stringify(JSON.parse(text), null, 2), json: true };
  } catch {
    return { text, json: false };
  }
}
