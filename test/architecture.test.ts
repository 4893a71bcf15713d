import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The shape docs/architecture.md promises, checked on every run: files of one subject (none over
// 400 lines), and imports that never run in a circle — type-only ones included, since a circle of
// types is still two files that cannot be understood apart.

const SRC = resolve(import.meta.dirname, '../src');
/** The store contract's feature files: tests, but one group each, so held to the size rule too. */
const STORE_CONTRACT = join(SRC, 'store/contract');
const MAX_LINES = 400;

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

const storeContractFiles = () =>
  readdirSync(STORE_CONTRACT)
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => join(STORE_CONTRACT, name));

/** Every file of src/ a file imports (or re-exports, or imports at run time), by relative specifier. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms),
    ...text.matchAll(/import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g),
  ].map((m) => m[1] as string);
  return specifiers.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** The import circles among `files`: each as the files in the order the imports run. */
function circles(files: string[], root = SRC): string[][] {
  const known = new Set(files);
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((t) => known.has(t))]));
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(path.slice(path.indexOf(next)));
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return found.map((circle) => circle.map((f) => relative(root, f)));
}

describe('the shape of src/', () => {
  it(`has no file over ${MAX_LINES} lines, the store contract's feature files included`, () => {
    const long = [...sourceFiles(), ...storeContractFiles()]
      .map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES);
    expect(long).toEqual([]);
  });

  it('runs every feature file of the store contract on every backend (describeEveryStore), and only so', () => {
    const files = storeContractFiles();
    expect(files.length).toBeGreaterThan(0);
    const astray = files
      .map((f) => ({ file: relative(SRC, f), text: readFileSync(f, 'utf8') }))
      .filter(({ text }) => !/^describeEveryStore\(/m.test(text) || /^(describe|it)\(/m.test(text))
      .map(({ file }) => file);
    expect(astray).toEqual([]);
  });

  it('builds the engine in one place, for the gateway and the library alike (runtime/)', () => {
    // A second place would grow its own defaults again (maintenance interval, task TTL, store, keys).
    const building = sourceFiles()
      .filter((f) => !f.endsWith('.contract.ts') && readFileSync(f, 'utf8').includes('new ExecutionEngine('))
      .map((f) => relative(SRC, f));
    expect(building).toEqual(['runtime/runtime.ts']);
  });

  it('has no import circle, type-only imports included', () => {
    expect(circles(sourceFiles())).toEqual([]);
  });

  it('the circle finder reports a circle of type-only imports (so that an empty answer means something)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-circles-'));
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js';\nexport type A = B[];\n");
      writeFileSync(join(dir, 'b.ts'), "import type { A } from './a.js';\nexport type B = { a: A };\n");
      writeFileSync(join(dir, 'c.ts'), "import type { A } from './a.js';\nexport type C = A;\n");
      expect(circles(sourceFiles(dir), dir)).toEqual([['a.ts', 'b.ts']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
