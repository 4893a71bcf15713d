/**
 * Package runners (`npx`, `pnpm dlx`, `bunx`, `bun x`, `yarn dlx`, `npm exec`, `uvx`, `uv tool
 * run`, `pipx run`): a command line that fetches a package and runs it. Which of its arguments
 * names the package is read here, once, for the two rules that need it: an upstream's identity
 * leaves the package's version out (upstream-identity.ts), and a zero-config upstream is named
 * after the package it runs (cli/upstream-name.ts).
 */

export type PackageEcosystem = 'npm' | 'python';

/** One argument of a runner's command line that names a package. */
export interface PackageArgument {
  /** Its index in the arguments. */
  index: number;
  /** What comes before the spec in that argument: `--package=` for `--package=x`, else ''. */
  prefix: string;
  /** The package spec as given: `@scope/name@1.2.3`, `name==1.2`. */
  spec: string;
}

/** A runner's command line, read. */
export interface RunnerCommandLine {
  ecosystem: PackageEcosystem;
  /** Every argument that names a package: the one it runs, and each `--package`/`--from`/`--spec` value. */
  packages: PackageArgument[];
  /** The index of what it runs (the first argument after the runner's own options): a package, or a bin of the `--package` given. */
  runs: number | undefined;
}

interface Runner {
  ecosystem: PackageEcosystem;
  /** The words that make the command a runner (`dlx` for pnpm); none for `npx`. */
  words: readonly string[];
  /** The runner's options that take a value (the next argument, unless written `--name=value`). */
  valued: ReadonlySet<string>;
  /** Of those, the ones whose value is a package. */
  packageOptions: ReadonlySet<string>;
}

const NPM_VALUED = words(
  '-p --package -c --call --registry --cache --userconfig -w --workspace --prefix',
  '--node-options',
);
const NPM_PACKAGE = new Set(['-p', '--package']);
const UV_VALUED = words(
  '--from --with --with-editable --with-requirements -p --python --index --default-index',
  '--index-url --extra-index-url -f --find-links --refresh-package -P --upgrade-package',
  '--reinstall-package -c --constraints --overrides -b --build-constraints --env-file',
  '--config-file --directory --project --cache-dir --python-preference --color',
  '--index-strategy --keyring-provider --resolution --prerelease --exclude-newer --link-mode',
  '-C --config-setting --allow-insecure-host',
);

const RUNNERS: Record<string, readonly Runner[]> = {
  npx: [{ ecosystem: 'npm', words: [], valued: NPM_VALUED, packageOptions: NPM_PACKAGE }],
  npm: [{ ecosystem: 'npm', words: ['exec'], valued: NPM_VALUED, packageOptions: NPM_PACKAGE }],
  pnpm: [
    {
      ecosystem: 'npm',
      words: ['dlx'],
      valued: new Set(['--package', '--allow-build', '-C', '--dir']),
      packageOptions: new Set(['--package']),
    },
  ],
  bunx: [{ ecosystem: 'npm', words: [], valued: new Set(['-p', '--package']), packageOptions: NPM_PACKAGE }],
  bun: [
    { ecosystem: 'npm', words: ['x'], valued: new Set(['-p', '--package']), packageOptions: NPM_PACKAGE },
  ],
  yarn: [
    { ecosystem: 'npm', words: ['dlx'], valued: new Set(['-p', '--package']), packageOptions: NPM_PACKAGE },
  ],
  uvx: [{ ecosystem: 'python', words: [], valued: UV_VALUED, packageOptions: new Set(['--from']) }],
  uv: [
    { ecosystem: 'python', words: ['tool', 'run'], valued: UV_VALUED, packageOptions: new Set(['--from']) },
  ],
  pipx: [
    {
      ecosystem: 'python',
      words: ['run'],
      valued: new Set(['--spec', '--python', '-i', '--index-url', '--pip-args', '--backend']),
      packageOptions: new Set(['--spec']),
    },
  ],
};

/** The options in `lines`, each a space-separated group. */
function words(...lines: string[]): Set<string> {
  return new Set(lines.flatMap((line) => line.split(' ')));
}

/** The program a command runs, without its directory or a Windows extension: `/usr/bin/npx.cmd` → `npx`. */
export function programName(command: string): string {
  const last = command.split(/[\\/]/).pop() ?? command;
  return last.replace(/\.(cmd|exe|bat|ps1)$/i, '');
}

/** The runner's reading of `command args`, or undefined when the command is not a package runner. */
export function packageRunner(command: string, args: readonly string[]): RunnerCommandLine | undefined {
  for (const runner of RUNNERS[programName(command)] ?? []) {
    const start = afterWords(args, runner);
    if (start !== undefined) return readRunner(runner, args, start);
  }
  return undefined;
}

/** Where the runner's own options begin: after its words (`dlx`), options before them skipped. */
function afterWords(args: readonly string[], runner: Runner): number | undefined {
  let i = 0;
  for (const word of runner.words) {
    for (; i < args.length && (args[i] as string).startsWith('-'); i++)
      if (runner.valued.has(args[i] as string)) i++;
    if (args[i] !== word) return undefined;
    i++;
  }
  return i;
}

function readRunner(runner: Runner, args: readonly string[], start: number): RunnerCommandLine {
  const packages: PackageArgument[] = [];
  for (let i = start; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      if (i + 1 < args.length) packages.push({ index: i + 1, prefix: '', spec: args[i + 1] as string });
      return { ecosystem: runner.ecosystem, packages, runs: i + 1 < args.length ? i + 1 : undefined };
    }
    if (!arg.startsWith('-') || arg === '-') {
      packages.push({ index: i, prefix: '', spec: arg });
      return { ecosystem: runner.ecosystem, packages, runs: i };
    }
    const equals = arg.indexOf('=');
    const option = equals > 0 ? arg.slice(0, equals) : arg;
    if (equals > 0) {
      if (runner.packageOptions.has(option))
        packages.push({ index: i, prefix: arg.slice(0, equals + 1), spec: arg.slice(equals + 1) });
      continue;
    }
    if (!runner.valued.has(option) || i + 1 >= args.length) continue;
    i++;
    if (runner.packageOptions.has(option)) packages.push({ index: i, prefix: '', spec: args[i] as string });
  }
  return { ecosystem: runner.ecosystem, packages, runs: undefined };
}

/** An npm registry spec: `name@range`, `@scope/name@range` (not a path, URL, git or alias spec). */
const NPM_VERSIONED = /^((?:@[^/@\s]+\/)?[^/@\s:]+)@.*$/;
/** A Python requirement: a name (extras kept), then a version specifier or `@` (uvx's `name@1.2`, `name@latest`). */
const PYTHON_VERSIONED =
  /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[^\]]*\])?)\s*(?:@|===|==|~=|!=|>=|<=|>|<).*$/;

/**
 * A package spec without its version: `@scope/name@1.2.3` → `@scope/name`, `name@latest` →
 * `name`, `name==1.2` → `name`. Anything else (a path, a URL, a git spec) is returned as given.
 */
export function withoutVersion(spec: string, ecosystem: PackageEcosystem): string {
  const match = (ecosystem === 'npm' ? NPM_VERSIONED : PYTHON_VERSIONED).exec(spec);
  return match ? (match[1] as string) : spec;
}
