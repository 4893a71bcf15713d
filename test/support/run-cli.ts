import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { IDEM_CLI } from './idem-cli.js';
import { REPO_ROOT } from './node22.js';

const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  dataDir: string;
  /** Run as this user (the test runs as root, whom file modes do not stop). */
  user?: { uid: number; gid: number };
  /** Kill it (SIGKILL) after this long: for a command that should exit at once, like a refused `idem gateway`. */
  timeoutMs?: number;
}

/** `idem …` as a user runs it (its own process, the compiled CLI); never throws on a non-zero exit. */
export async function runIdem(args: string[], options: RunOptions): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [IDEM_CLI, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, IDEM_DATA_DIR: options.dataDir },
      maxBuffer: 64 * 1024 * 1024,
      ...(options.user ?? {}),
      ...(options.timeoutMs ? { timeout: options.timeoutMs, killSignal: 'SIGKILL' as const } : {}),
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as CliResult;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** An unprivileged user to run a command as, when the tests run as root; undefined otherwise. */
export function unprivilegedUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  // nobody/nogroup on Debian and most others.
  return { uid: 65534, gid: 65534 };
}
