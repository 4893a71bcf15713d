import { packageRunner, programName, withoutVersion } from '../identity/package-runner.js';

/**
 * The upstream name of `idem gateway -- <command> <args…>` (and of `idem init`'s config): what it
 * runs, as a config key (`[A-Za-z0-9_-]`, at most 32 characters). Only a handle — the visible tool
 * prefix and the operator's word for the upstream; what the server IS for deduplication is its
 * identity (identity/upstream-identity.ts), which never depends on this name.
 * - a package runner (`npx -y @modelcontextprotocol/server-memory`, `uvx mcp-server-fetch@1.2`):
 *   the package without scope or version (`server-memory`, `mcp-server-fetch`);
 * - an interpreter with a script (`node ./dir/a.mjs`, `python x.py`, `tsx x.ts`, `deno run x.ts`,
 *   `bun x.ts`, `uv run x.py`): the script's name without extension (`a`, `x`); an `index` or
 *   `main` script takes its package's directory name (`weather/build/index.js` → `weather`);
 * - `python -m pkg.mod`: the module (`pkg_mod`);
 * - `docker run … image:tag` (or podman): the image's name (`ghcr.io/org/server:1` → `server`);
 * - else the command's own name (`/usr/local/bin/my-server` → `my-server`).
 */
export function commandUpstreamName(command: string, args: readonly string[] = []): string {
  return sanitised(whatItRuns(command, args) ?? programName(command));
}

/** The upstream name of `idem gateway -- <URL>`: its host, sanitised the same way (`127.0.0.1` → `127_0_0_1`). */
export function urlUpstreamName(url: URL): string {
  return sanitised(url.hostname);
}

function sanitised(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 32) || 'upstream';
}

function whatItRuns(command: string, args: readonly string[]): string | undefined {
  const runner = packageRunner(command, args);
  if (runner) {
    const runs = runner.runs === undefined ? undefined : (args[runner.runs] as string);
    return runs === undefined ? undefined : lastSegment(withoutVersion(runs, runner.ecosystem));
  }
  const program = programName(command).toLowerCase();
  if (program === 'docker' || program === 'podman') return imageOf(args);
  for (const interpreter of INTERPRETERS) {
    if (!interpreter.programs.test(program)) continue;
    const start = afterWords(args, interpreter);
    if (start !== undefined) return scriptOf(args, start, interpreter);
  }
  return undefined;
}

/** Where an interpreter's own options begin (after `run` for deno), or undefined when its words are not there. */
function afterWords(args: readonly string[], interpreter: Interpreter): number | undefined {
  let i = 0;
  for (const word of interpreter.words ?? []) {
    i = skipOptions(args, i, interpreter.valued);
    if (args[i] !== word) return undefined;
    i++;
  }
  return i;
}

/** The script (or module) the interpreter runs, named; undefined for code given inline. */
function scriptOf(args: readonly string[], from: number, interpreter: Interpreter): string | undefined {
  for (let i = from; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '-') return undefined;
    if (!arg.startsWith('-')) return scriptName(arg);
    if (interpreter.module?.has(arg)) return args[i + 1];
    if (interpreter.code?.has(arg)) return undefined;
    if (interpreter.valued.has(arg)) i++;
  }
  return undefined;
}

interface Interpreter {
  /** The command's own name (lower case, no extension). */
  programs: RegExp;
  /** Words that come before the script (`run` for deno). */
  words?: readonly string[];
  /** Its options that take a value as the next argument. */
  valued: ReadonlySet<string>;
  /** Options whose value is a module to run (`python -m`). */
  module?: ReadonlySet<string>;
  /** Options whose value is code (`node -e`): then there is no script to name it after. */
  code?: ReadonlySet<string>;
}

/** In order: the first whose program and words match reads the arguments (`bun run x.ts` before `bun x.ts`). */
const INTERPRETERS: readonly Interpreter[] = [
  { programs: /^bun$/, words: ['run'], valued: new Set(['--cwd', '--env-file']) },
  {
    programs: /^(node|nodejs|tsx|ts-node|bun)$/,
    valued: new Set([
      '-r',
      '--require',
      '--import',
      '--loader',
      '--experimental-loader',
      '-C',
      '--conditions',
      '--input-type',
      '--env-file',
      '--inspect-port',
      '--title',
    ]),
    code: new Set(['-e', '--eval', '-p', '--print']),
  },
  {
    programs: /^(python|python\d(\.\d+)?|py|pypy\d?)$/,
    valued: new Set(['-W', '-X', '--check-hash-based-pycs']),
    module: new Set(['-m']),
    code: new Set(['-c']),
  },
  {
    programs: /^uv$/,
    words: ['run'],
    valued: new Set(['--with', '--from', '--python', '-p', '--directory', '--project', '--env-file']),
    module: new Set(['-m']),
  },
  {
    programs: /^deno$/,
    words: ['run'],
    valued: new Set(['-c', '--config', '--import-map', '--env-file', '--location', '--seed', '--v8-flags']),
  },
];

function skipOptions(args: readonly string[], from: number, valued: ReadonlySet<string>): number {
  let i = from;
  for (; i < args.length && (args[i] as string).startsWith('-'); i++) if (valued.has(args[i] as string)) i++;
  return i;
}

/** `./dir/a.mjs` → `a`; `weather/build/index.js` → `weather`; `jsr:@scope/pkg@1` → `pkg` (deno). */
function scriptName(script: string): string {
  const registry = /^(npm|jsr):(.+)$/.exec(script);
  if (registry) return lastSegment(withoutVersion(registry[2] as string, 'npm'));
  const parts = script.split(/[\\/:]/).filter((part) => part !== '' && part !== '.' && part !== '..');
  const file = (parts.pop() ?? script).replace(/\.[A-Za-z0-9]+$/, '');
  if (file !== 'index' && file !== 'main') return file;
  // An entry point is named after its package: the nearest directory that is not a build's.
  const dir = parts.reverse().find((part) => !BUILD_DIRS.has(part.toLowerCase()));
  return dir ?? file;
}

const BUILD_DIRS = new Set(['build', 'dist', 'lib', 'src', 'out', 'bin', 'esm', 'cjs']);

/** The package name's last segment: `@scope/name` → `name`, `github:org/repo` → `repo`. */
function lastSegment(spec: string): string {
  return (
    spec
      .split(/[\\/:]/)
      .filter(Boolean)
      .pop() ?? spec
  );
}

/** Docker run's options that take a value as the next argument. */
const DOCKER_VALUED = words(
  '-e --env --env-file -v --volume --mount -p --publish --name --network --net -w --workdir -u',
  '--user --entrypoint -l --label --label-file --platform --pull -h --hostname --add-host',
  '--cpus -m --memory --cap-add --cap-drop --device --dns --restart --runtime --security-opt',
  '--shm-size --ulimit --tmpfs --log-driver --log-opt -a --attach --cidfile --gpus --ipc --pid',
  '--stop-signal --stop-timeout --health-cmd --health-interval --health-retries',
  '--health-timeout --group-add --link --memory-swap --cpu-shares -c --userns --uts --cgroupns',
  '--volumes-from --expose',
);

/** `docker run [options] image[:tag|@digest] …` (or `docker container run`) → the image's name. */
function imageOf(args: readonly string[]): string | undefined {
  let i = args[0] === 'container' ? 1 : 0;
  if (args[i] !== 'run') return undefined;
  i = skipOptions(args, i + 1, DOCKER_VALUED);
  const image = args[i];
  if (image === undefined) return undefined;
  const name = image.split('@')[0]?.split('/').pop() ?? image;
  return name.replace(/:[^:]*$/, '') || undefined;
}

/** The options in `lines`, each a space-separated group. */
function words(...lines: string[]): Set<string> {
  return new Set(lines.flatMap((line) => line.split(' ')));
}
