/**
 * Runs once before the suite: compiles src/ into dist/ (`tsc -p
 * tsconfig.build.json`, incremental), because the process-level tests start
 * the CLI from dist/ as users do (test/support/idem-cli.ts). A compile error
 * stops the run here, with tsc's own message, instead of as a hundred
 * unrelated test failures.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export default function compileDist(): void {
  const root = join(import.meta.dirname, '..');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
    cwd: root,
    stdio: 'inherit',
  });
}
