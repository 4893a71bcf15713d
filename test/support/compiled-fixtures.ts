/**
 * The TypeScript programs the tests start as processes (MCP servers that count, crash, hang, …),
 * compiled once per run.
 *
 * Why: `node --import tsx fixture.ts` costs about a second of CPU per start (tsx's loader and its
 * esbuild service), and the suite starts hundreds of fixture processes on two cores — the
 * conformance suites one per scenario. test/global-setup.ts bundles each program below with esbuild
 * into test/.compiled/ (gitignored): npm packages stay imports, and an import of src/ is pointed at
 * dist/, which the same setup has just compiled, so a worker module (the SQLite checkpointer) is
 * found where the CLI's is. `fixtureArgs` gives node's arguments for one: the bundle, or tsx and the
 * source when there is no bundle (a file run without the suite's setup, e.g. by hand).
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { REPO_ROOT } from './node22.js';

/** Every program a test starts with node, relative to the repository. */
export const FIXTURE_PROGRAMS = [
  'test/gateway/fixtures/annotated-server.ts',
  'test/gateway/fixtures/counting-server-2026.ts',
  'test/gateway/fixtures/counting-server.ts',
  'test/gateway/fixtures/crashing-server.ts',
  'test/gateway/fixtures/deep-result-server.ts',
  'test/gateway/fixtures/echo-server.ts',
  'test/gateway/fixtures/env-server.ts',
  'test/gateway/fixtures/keeping-task-server.ts',
  'test/gateway/fixtures/leaky-server.ts',
  'test/gateway/fixtures/noisy-server.ts',
  'test/gateway/fixtures/plain-tools-server.ts',
  'test/gateway/fixtures/schema-id-server.ts',
  'test/gateway/fixtures/task-server.ts',
  'test/fixtures/provision-server.ts',
  'test/fixtures/ssh-tool-server.ts',
  'test/support/counting-mcp-server.ts',
  'test/conformance/fixture-server.ts',
  'test/conformance/tasks-upstream.ts',
  'test/conformance/tasks-upstream-v1.ts',
  'test/probe/fixtures/pass-through.ts',
  'examples/charge-card.ts',
  'examples/probe-counter.ts',
] as const;

const COMPILED = join(REPO_ROOT, 'test/.compiled');
const SRC = join(REPO_ROOT, 'src');
const DIST = join(REPO_ROOT, 'dist');

/** Where the bundle of `program` (a path inside the repository) is written. */
function bundleOf(program: string): string {
  return join(COMPILED, relative(REPO_ROOT, resolve(REPO_ROOT, program)).replace(/\.ts$/, '.mjs'));
}

/**
 * node's arguments that run `program` (absolute or relative to the repository), before the
 * program's own: its bundle when the suite's setup made one no older than the source, else tsx.
 */
export function fixtureArgs(program: string): string[] {
  const source = resolve(REPO_ROOT, program);
  if (!(FIXTURE_PROGRAMS as readonly string[]).includes(relative(REPO_ROOT, source)))
    throw new Error(
      `${program} is not in FIXTURE_PROGRAMS (test/support/compiled-fixtures.ts): add it there`,
    );
  const bundle = bundleOf(source);
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(source).mtimeMs) return [bundle];
  return ['--import', 'tsx', source];
}

/** Bundles every program in FIXTURE_PROGRAMS (run by test/global-setup.ts after dist/ is compiled). */
export async function compileFixtures(): Promise<void> {
  const { build } = await import('esbuild');
  mkdirSync(COMPILED, { recursive: true });
  await Promise.all(
    FIXTURE_PROGRAMS.map((program) => {
      const outfile = bundleOf(program);
      mkdirSync(dirname(outfile), { recursive: true });
      return build({
        entryPoints: [join(REPO_ROOT, program)],
        outfile,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        logLevel: 'error',
        plugins: [
          {
            name: 'src-from-dist',
            setup(b) {
              // src/x.js (how the sources import each other) is dist/x.js, kept as an import.
              b.onResolve({ filter: /^\./ }, (args) => {
                const target = resolve(args.resolveDir, args.path);
                if (!target.startsWith(`${SRC}/`)) return undefined;
                return { path: join(DIST, relative(SRC, target)).replace(/\.ts$/, '.js'), external: true };
              });
            },
          },
        ],
      });
    }),
  );
}
