/**
 * dist/, the CLI as users run it (`npx idem` is `node dist/cli/main.js`), for
 * the process-level tests and the benchmarks: one way to build it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');
export const BUILT_CLI = join(ROOT, 'dist/cli/main.js');

/**
 * Compiles src/ into dist/ (`tsc -p tsconfig.build.json`, incremental: seconds
 * when little changed). A compile error throws with tsc's own message.
 */
export function compileDist(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}

/** dist/cli/main.js, compiled first when it is missing or older than any file in src/, so it is never stale code. */
export function builtCli(): string {
  if (!existsSync(BUILT_CLI) || statSync(BUILT_CLI).mtimeMs < newestMtime(join(ROOT, 'src'))) compileDist();
  return BUILT_CLI;
}

/** Newest modification time of any file under `dir` (ms). */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}
