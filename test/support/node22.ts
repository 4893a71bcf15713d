/**
 * Node 22 for the tools that need it — the MCP conformance suite and the
 * Inspector's `mcpdo` — while the project itself runs on the machine's Node 20.
 *
 * It comes from the `idem-node22` dev dependency (tools/node22), whose install
 * script puts the registry's Node binary in tools/node22/bin. It is a local
 * package on purpose: the npm `node` package declares a `node` bin, which
 * would land in node_modules/.bin and shadow the machine's Node in every npm
 * script (tests, native builds) of this project.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Lowest version that runs both tools (the Inspector asks for >= 22.19). */
const MINIMUM = [22, 19] as const;

let checked: string | undefined;

/** Path of the Node 22 binary; throws with instructions if it is missing or too old. */
export function node22(): string {
  if (checked) return checked;
  const path = join(REPO_ROOT, 'tools/node22/bin', process.platform === 'win32' ? 'node.exe' : 'node');
  if (!existsSync(path)) {
    throw new Error(
      `Node 22 is missing at ${path}. It is installed by the idem-node22 dev dependency's install script: ` +
        'run `npm ci` (with install scripts enabled).',
    );
  }
  const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
  const [major = 0, minor = 0] = version.slice(1).split('.').map(Number);
  if (major < MINIMUM[0] || (major === MINIMUM[0] && minor < MINIMUM[1])) {
    throw new Error(
      `${path} is ${version}; the conformance suite and the Inspector need >= ${MINIMUM.join('.')}`,
    );
  }
  checked = path;
  return path;
}

/** Absolute path of an installed package's bin script (run it with `node22()`, not through its shebang). */
export function packageBin(packageName: string, binName: string): string {
  const require = createRequire(join(REPO_ROOT, 'package.json'));
  const manifestPath = require.resolve(`${packageName}/package.json`);
  const manifest = require(manifestPath) as { bin?: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[binName];
  if (!bin) throw new Error(`${packageName} has no bin named ${binName}`);
  return join(dirname(manifestPath), bin);
}
