/**
 * better-sqlite3 is a native addon: installed with scripts disabled (`--ignore-scripts`,
 * pnpm's default until its build is approved) it has no compiled module, and under another
 * Node.js it has one built for the wrong ABI. Its own error is a dozen lines of paths tried;
 * this says in one line what happened and the command that fixes it.
 */
export function nativeModuleProblem(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  if (/Could not locate the bindings file/.test(error.message)) {
    return (
      "better-sqlite3's native module is not built (installed with --ignore-scripts, or by pnpm without approving its build): " +
      'run `npm rebuild better-sqlite3` (pnpm: `pnpm approve-builds`), then start again'
    );
  }
  if (/NODE_MODULE_VERSION/.test(error.message)) {
    return (
      `better-sqlite3's native module was built for another Node.js version than this one (${process.version}): ` +
      'run `npm rebuild better-sqlite3`, then start again'
    );
  }
  return undefined;
}
