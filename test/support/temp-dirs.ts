import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const temporaries: string[] = [];

/** A fresh temporary directory, removed by `removeTemporaries()`. */
export function freshDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `idem-${prefix}-`));
  temporaries.push(dir);
  return dir;
}

export function removeTemporaries(): void {
  for (const dir of temporaries.splice(0)) rmSync(dir, { recursive: true, force: true });
}
