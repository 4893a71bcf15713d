import { join } from 'node:path';
import { fixtureArgs } from './compiled-fixtures.js';
import { REPO_ROOT } from './node22.js';

/** The MCP server that counts every execution into a directory (test/gateway/fixtures/counting-server.ts). */
export const COUNTING_SERVER = join(REPO_ROOT, 'test/gateway/fixtures/counting-server.ts');

/** The counting upstream as a stdio command; it counts into `dir`. */
export function countingUpstream(dir: string): { command: string; args: string[]; cwd: string } {
  return {
    command: process.execPath,
    args: [...fixtureArgs(COUNTING_SERVER), '--dir', dir],
    cwd: REPO_ROOT,
  };
}
