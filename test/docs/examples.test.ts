import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/gateway/config/index.js';
import { BUILT_CLI } from '../support/dist.js';
import {
  anchorsOf,
  type DocBlock,
  docFiles,
  fencedBlocks,
  readPage,
  relativeLinks,
  strayMarkers,
} from '../support/doc-blocks.js';
import { REPO_ROOT } from '../support/node22.js';

/**
 * Every example a page marks runnable (the line `<!-- doc-test -->` above its fenced block) runs
 * or is checked here, so that what a newcomer copies works: shell commands run with `idem` on
 * PATH, YAML loads as a gateway config, JSON parses (an MCP client config must start idem),
 * TypeScript type-checks against the package. And every relative link leads to a file (and the
 * heading it names).
 */

const pages = docFiles(REPO_ROOT).map((file) => ({ file, text: readPage(REPO_ROOT, file) }));
const marked = pages.flatMap(({ file, text }) => fencedBlocks(file, text).filter((block) => block.marked));
const where = (block: DocBlock, offset = 0) => `${block.file}:${block.line + offset}`;
const ofLang = (...langs: string[]) => marked.filter((block) => langs.includes(block.lang));

const scratch = mkdtempSync(join(tmpdir(), 'idem-doc-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A directory with `idem` in it, as an installed package puts it on PATH. */
const shimDir = join(scratch, 'bin');
mkdirSync(shimDir);
writeFileSync(
  join(shimDir, 'idem'),
  `#!/bin/sh\nexec "${process.execPath}" "${resolve(REPO_ROOT, 'bin/idem.js')}" "$@"\n`,
);
chmodSync(join(shimDir, 'idem'), 0o755);

const SHELL_TIMEOUT_MS = 45_000;

/** Runs a shell block as a new user would: from the repository's root, in a fresh HOME and data directory. */
function runShell(block: DocBlock, index: number): Promise<{ code: number | null; output: string }> {
  const home = join(scratch, `home-${index}`);
  mkdirSync(join(home, 'data'), { recursive: true });
  const script = join(scratch, `block-${index}.sh`);
  writeFileSync(script, `set -e\n${block.text}\n`);
  return new Promise((settle) => {
    const child = spawn('bash', ['-o', 'pipefail', script], {
      cwd: REPO_ROOT,
      // Its own process group: a timeout ends what the block started, too.
      detached: true,
      env: {
        PATH: `${shimDir}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        HOME: home,
        IDEM_DATA_DIR: join(home, 'data'),
        LANG: 'C.UTF-8',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => {
      output += `\n[killed after ${SHELL_TIMEOUT_MS} ms]`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, SHELL_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      settle({ code, output });
    });
  });
}

describe('doc-test markers', () => {
  it('each stands right above a fenced block of a language the test knows', () => {
    const known = ['sh', 'bash', 'shell', 'yaml', 'yml', 'json', 'ts', 'typescript'];
    const problems = [
      ...pages
        .flatMap(({ file, text }) => strayMarkers(file, text))
        .map((p) => `${p.file}:${p.line}: ${p.problem}`),
      ...marked
        .filter((b) => !known.includes(b.lang))
        .map((b) => `${where(b)}: a \`${b.lang}\` block is not run`),
    ];
    expect(problems).toEqual([]);
  });

  it('the extractor finds a marked block, with its line, and ignores an unmarked one', () => {
    const page = [
      '# T',
      '',
      '<!-- doc-test -->',
      '```sh',
      'idem --version',
      '```',
      '',
      '```sh',
      'no',
      '```',
    ].join('\n');
    expect(fencedBlocks('t.md', page)).toEqual([
      { file: 't.md', line: 5, lang: 'sh', text: 'idem --version', marked: true },
      { file: 't.md', line: 9, lang: 'sh', text: 'no', marked: false },
    ]);
  });
});

// No describe around the blocks of one kind: a page set with none of them is no failure.
it.each(ofLang('sh', 'bash', 'shell').map((block, index) => [where(block), block, index] as const))(
  'the shell block at %s runs and exits 0',
  async (_, block, index) => {
    expect(existsSync(BUILT_CLI), 'dist/ is built (npm ci does it)').toBe(true);
    const { code, output } = await runShell(block, index);
    expect(code, `${where(block)}: the block exited ${code}:\n${output}`).toBe(0);
  },
  SHELL_TIMEOUT_MS + 15_000,
);

it.each(ofLang('yaml', 'yml').map((block, index) => [where(block), block, index] as const))(
  'the YAML block at %s is a gateway config the loader takes',
  (_, block, index) => {
    const path = join(scratch, `config-${index}.yaml`);
    writeFileSync(path, block.text);
    let problem = '';
    try {
      loadConfig(path);
    } catch (error) {
      // The loader names the temporary file and a line in it; said as the page's line instead.
      problem = String((error as Error).message).replace(
        new RegExp(`${path}(?::(\\d+))?`, 'g'),
        (_m, line?: string) => (line ? where(block, Number(line) - 1) : where(block)),
      );
    }
    expect(problem).toBe('');
  },
);

/** An MCP client's config: each server it starts must be idem (the page is about running through it). */
function clientConfigProblems(block: DocBlock, value: unknown): string[] {
  const servers = (value as { mcpServers?: Record<string, { command?: string; args?: string[] }> })
    .mcpServers;
  if (!servers || typeof servers !== 'object') return [];
  return Object.entries(servers).flatMap(([name, server]) => {
    if (server.command === undefined) return []; // a URL server: nothing is started
    const first = server.args?.find((arg) => !arg.startsWith('-'));
    // `idem`, `npx … idem`, or node running a checkout's `bin/idem.js`.
    const idem =
      server.command === 'idem' ||
      (server.command === 'npx' && first === 'idem') ||
      (server.command === 'node' && first?.endsWith('bin/idem.js') === true);
    return idem
      ? []
      : [
          `${where(block)}: mcpServers.${name} starts ${server.command}, not idem, npx idem or node …/bin/idem.js`,
        ];
  });
}

it.each(ofLang('json').map((block) => [where(block), block] as const))(
  'the JSON block at %s parses',
  (_, block) => {
    let value: unknown;
    expect(
      () => {
        value = JSON.parse(block.text);
      },
      `${where(block)} is JSON`,
    ).not.toThrow();
    expect(clientConfigProblems(block, value)).toEqual([]);
  },
);

const tsBlocks = ofLang('ts', 'typescript');
if (tsBlocks.length > 0)
  it('the TypeScript blocks type-check against the package (one tsc run for all)', async () => {
    // Inside the repository, so that what a block imports besides idem resolves as in a project.
    const cache = join(REPO_ROOT, 'node_modules/.cache');
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'idem-doc-test-'));
    try {
      tsBlocks.forEach((block, index) => {
        writeFileSync(join(dir, `block-${index}.ts`), `${block.text}\nexport {};\n`);
      });
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          extends: join(REPO_ROOT, 'tsconfig.json'),
          compilerOptions: {
            noEmit: true,
            declaration: false,
            sourceMap: false,
            paths: { idem: [join(REPO_ROOT, 'src/index.ts')] },
          },
          include: ['*.ts'],
        }),
      );
      const tsc = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
      const { output } = await new Promise<{ output: string }>((settle) => {
        const child = spawn(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json'), '--pretty', 'false'], {
          cwd: dir,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let text = '';
        child.stdout.on('data', (c: Buffer) => {
          text += c.toString();
        });
        child.stderr.on('data', (c: Buffer) => {
          text += c.toString();
        });
        child.on('close', () => settle({ output: text }));
      });
      // tsc names block-N.ts(line,col); said as the page's file:line.
      const problems = output
        .split('\n')
        .filter((line) => line.includes('error TS'))
        .map((line) =>
          line.replace(/^.*block-(\d+)\.ts\((\d+),\d+\)/, (_m, n: string, l: string) => {
            const block = tsBlocks[Number(n)];
            return block ? where(block, Number(l) - 1) : _m;
          }),
        );
      expect(problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

describe('links', () => {
  it('finds the links of a page, not those in code', () => {
    const page = ['[a](b.md#c) `[x](y.md)`', '```', '[z](w.md)', '```', '[r]: ./s.md'].join('\n');
    expect(relativeLinks('t.md', page).map((l) => [l.line, l.target])).toEqual([
      [1, 'b.md#c'],
      [5, './s.md'],
    ]);
    expect([...anchorsOf('## `IDEM_X` reasons\n## A, b (c)\n## A, b (c)')]).toEqual([
      'idem_x-reasons',
      'a-b-c',
      'a-b-c-1',
    ]);
  });

  it('every relative link of README.md and docs/ leads to a file, and to a heading of it when it names one', () => {
    const anchors = new Map<string, Set<string>>();
    const anchorsIn = (file: string) => {
      if (!anchors.has(file)) anchors.set(file, anchorsOf(readPage(REPO_ROOT, file)));
      return anchors.get(file) as Set<string>;
    };
    const broken = pages.flatMap(({ file, text }) =>
      relativeLinks(file, text).flatMap(({ line, target }) => {
        const [path = '', anchor] = target.split('#');
        const resolved = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        if (!existsSync(join(REPO_ROOT, resolved))) return [`${file}:${line}: ${target} (no such file)`];
        if (anchor && resolved.endsWith('.md') && !anchorsIn(resolved).has(anchor))
          return [`${file}:${line}: ${target} (no heading #${anchor} in ${resolved})`];
        return [];
      }),
    );
    expect(broken).toEqual([]);
  });
});
