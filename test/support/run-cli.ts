import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO_ROOT = join(import.meta.dirname, '../..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `idem …` as a user runs it (its own process, from src through tsx); never throws on a non-zero exit. */
export async function runIdem(args: string[], options: { dataDir: string }): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), ...args],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, IDEM_DATA_DIR: options.dataDir },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as CliResult;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
