/**
 * The `idem` CLI as the tests start it: the compiled dist/cli/main.js, which is
 * what `npx idem` runs (bin/idem.js imports it). test/global-setup.ts compiles
 * dist/ once before any test file runs, so it is never older than src/.
 *
 * Not `node --import tsx src/cli/main.ts`: tsx costs about two seconds of CPU
 * per process start, and the suite starts the CLI hundreds of times on two cores.
 */
import { BUILT_CLI } from './dist.js';
import { REPO_ROOT } from './node22.js';

export const IDEM_CLI = BUILT_CLI;

/** `idem <args…>` as a command line for spawn / StdioClientTransport. */
export function idemCommand(args: string[]): { command: string; args: string[]; cwd: string } {
  return { command: process.execPath, args: [IDEM_CLI, ...args], cwd: REPO_ROOT };
}
