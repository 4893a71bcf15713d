/**
 * The one `sleep` and the one condition wait of the tests' support code.
 * Inside a vitest test, wait on a condition with `vi.waitFor`; `waitUntil` is
 * for code that also runs outside vitest (fixtures, scripts/, loops shared with
 * scripts). A `sleep` never decides an outcome: it paces a loop, holds a fixture
 * for a length a test asked for, or proves an absence after a condition made
 * the presence observable.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns true; throws after `timeoutMs` (a cap for a hung run, not a guess). */
export async function waitUntil(
  what: string,
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/**
 * `vi.waitFor`'s options for a condition a test waits on: the timeout is a cap
 * for a hung run (a loaded machine gets there later, no differently), not a
 * guess at how long a step takes.
 */
export const PATIENTLY = { timeout: 30_000, interval: 25 };
