/**
 * The far side's count: the probe's counting upstream appends one line per
 * event to `effects.jsonl` in its directory — `start` before the action's
 * effect is taken as done (so a call killed mid-way still counts), `end` when
 * it answers. One `appendFileSync` per line (O_APPEND): concurrent calls and
 * several upstream processes never tear a line.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const EFFECTS_FILE = 'effects.jsonl';

export interface EffectLine {
  key: string;
  event: 'start' | 'end';
  pid: number;
}

export function recordEffect(dir: string, line: EffectLine): void {
  appendFileSync(join(dir, EFFECTS_FILE), `${JSON.stringify(line)}\n`);
}

export function readEffects(dir: string): EffectLine[] {
  let text: string;
  try {
    text = readFileSync(join(dir, EFFECTS_FILE), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as EffectLine);
}

/** How many times the action `key` started at the far side. */
export function effectsOf(dir: string, key: string): number {
  return readEffects(dir).filter((l) => l.key === key && l.event === 'start').length;
}

/** Starts that have not ended, in processes that are still alive: work still under way. */
export function underWay(dir: string): EffectLine[] {
  const lines = readEffects(dir);
  const open: EffectLine[] = [];
  for (const line of lines) {
    if (line.event === 'start') open.push(line);
    else {
      const at = open.findIndex((o) => o.key === line.key && o.pid === line.pid);
      if (at >= 0) open.splice(at, 1);
    }
  }
  return open.filter((line) => alive(line.pid));
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
