/**
 * Runs once before the suite: compiles src/ into dist/ (incremental), because
 * the process-level tests start the CLI from dist/ as users do
 * (test/support/idem-cli.ts). A compile error stops the run here, with tsc's
 * own message, instead of as a hundred unrelated test failures.
 */
export { compileDist as default } from './support/dist.js';
