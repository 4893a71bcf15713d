/**
 * Lists import cycles among the files of src/ (tests left out), type-only
 * imports included: a cycle of types still ties two files' subjects
 * together. Exits 1 when there is one.
 *
 *   npx tsx scripts/import-cycles.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// Run from the repository's root.
const root = resolve(process.cwd(), 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = sources(root);
const known = new Set(files);
/** Every relative `import … from`, `export … from` and bare `import '…'`, as the file it names. */
const imports = new Map(
  files.map((file) => {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:from|import)\s+'(\.{1,2}\/[^']+)'/g)]
      .map((m) => resolve(dirname(file), (m[1] as string).replace(/\.js$/, '.ts')))
      .filter((target) => known.has(target));
    return [file, [...new Set(targets)]] as const;
  }),
);

// Tarjan's strongly connected components: each component of more than one file is a cycle.
let counter = 0;
const index = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const cycles: string[][] = [];
function visit(file: string): void {
  index.set(file, counter);
  low.set(file, counter++);
  stack.push(file);
  onStack.add(file);
  for (const next of imports.get(file) ?? []) {
    if (!index.has(next)) {
      visit(next);
      low.set(file, Math.min(low.get(file)!, low.get(next)!));
    } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
  }
  if (low.get(file) !== index.get(file)) return;
  const component: string[] = [];
  for (let member = stack.pop(); member; member = stack.pop()) {
    onStack.delete(member);
    component.push(member);
    if (member === file) break;
  }
  if (component.length > 1) cycles.push(component.map((f) => relative(root, f)).sort());
}
for (const file of files) if (!index.has(file)) visit(file);

for (const cycle of cycles) console.log(`cycle: ${cycle.join(' ↔ ')}`);
console.log(`${files.length} files, ${cycles.length} import cycle(s)`);
process.exit(cycles.length > 0 ? 1 : 0);
