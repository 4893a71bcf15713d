/**
 * Runs once before the suite: compiles src/ into dist/ (incremental), because
 * the process-level tests start the CLI from dist/ as users do
 * (test/support/idem-cli.ts), then bundles the programs the tests start as
 * processes (test/support/compiled-fixtures.ts), whose imports of src/ are dist/.
 * A compile error stops the run here, with the compiler's own message, instead
 * of as a hundred unrelated test failures.
 */
import { compileFixtures } from './support/compiled-fixtures.js';
import { compileDist } from './support/dist.js';

export default async function setup(): Promise<void> {
  compileDist();
  await compileFixtures();
}
