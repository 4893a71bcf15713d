import { counted, LIMIT_KEYS, LimitExceeded, type OpenApiLimits } from './limits.js';

/** What swagger-parser resolved (its `$refs`): every file of the document, by absolute path or URL. */
export interface ResolvedRefs {
  /** The value a `$ref`, made absolute, points to; throws when it points nowhere. */
  get(ref: string): unknown;
}

/** What an object comes to once every `$ref` under it is replaced. */
interface Expanded {
  objects: number;
  depth: number;
}

interface Frame {
  node: object;
  /** The file its `$ref`s are relative to. */
  base: string;
  /** How it was reached from the frame below: a key, or `→ <$ref>`. */
  step: string;
  /** What it holds once expanded: the objects it contains, then each `$ref`'s target. */
  next: Array<{ node: object; base: string; step: string }> | undefined;
  index: number;
  objects: number;
  depth: number;
}

/**
 * Refuses a document that its `$ref`s (and the YAML aliases it was parsed with, which share one
 * object) make larger than `limits.expanded` objects or deeper than `limits.depth` once replaced
 * — before swagger-parser replaces them: its dereference walks every path of the expansion (10⁵
 * objects, 0.1 s; 10⁶, about 1 s), and recurses once per level of it (a chain of 3,000 schemas
 * each referring to the next overflows the stack; one of 800 takes 8 s).
 *
 * What each object expands to is computed once (post-order, kept by identity), so the check
 * costs the objects and references as written, whatever they expand to. A `$ref` back to an
 * object being expanded is circular: swagger-parser leaves it as it is, and it counts as one
 * object here. An explicit stack, so the walk never recurses itself. A `$ref` that points
 * nowhere counts as one object: the validation then says where it is.
 */
export function checkExpansion(
  root: unknown,
  rootPath: string,
  refs: ResolvedRefs,
  limits: OpenApiLimits,
): void {
  if (root === null || typeof root !== 'object') return;
  const done = new Map<object, Expanded>();
  const expanding = new Set<object>();
  const stack: Frame[] = [frame(root, rootPath, '#')];
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Frame;
    if (top.next === undefined) {
      top.next = contents(top, refs);
      expanding.add(top.node);
      // Stops the stack growing past the bound, before the pop below could see it.
      if (stack.length > limits.depth && levelsOf(stack) > limits.depth) throw tooDeep(limits, stack);
    }
    const child = top.next[top.index++];
    if (child) {
      const known = done.get(child.node);
      if (known) add(top, known);
      else if (expanding.has(child.node)) add(top, { objects: 1, depth: 1 });
      else stack.push(frame(child.node, child.base, child.step));
      continue;
    }
    stack.pop();
    expanding.delete(top.node);
    // A `$ref` object is replaced by what it names: it adds no object and no level of its own.
    const own = isRef(top.node) ? 0 : 1;
    const expanded = { objects: top.objects + own, depth: top.depth + own };
    // The root's own depth is the deepest path of all: every way down is checked by the time it is done.
    if (expanded.depth > limits.depth) throw tooDeep(limits, [...stack, top]);
    if (expanded.objects > limits.expanded)
      throw new LimitExceeded(
        'expanded',
        `its $refs (and YAML aliases) expand it to more than ${counted(limits.expanded)} objects (${LIMIT_KEYS.expanded}): ${pathOf([...stack, top])} alone expands to ${counted(expanded.objects)}`,
      );
    done.set(top.node, expanded);
    const below = stack[stack.length - 1];
    if (below) add(below, expanded);
  }
}

function tooDeep(limits: OpenApiLimits, stack: readonly Frame[]): LimitExceeded {
  return new LimitExceeded(
    'depth',
    `once its $refs are replaced it nests deeper than ${counted(limits.depth)} levels (${LIMIT_KEYS.depth}), at ${pathOf(stack)}`,
  );
}

function frame(node: object, base: string, step: string): Frame {
  return { node, base, step, next: undefined, index: 0, objects: 0, depth: 0 };
}

function add(frame: Frame, expanded: Expanded): void {
  frame.objects += expanded.objects;
  frame.depth = Math.max(frame.depth, expanded.depth);
}

function isRef(node: object): node is { $ref: string } {
  return typeof (node as { $ref?: unknown }).$ref === 'string';
}

/** An object's children, and for a `$ref` what it names in its place (with the file it is in). */
function contents(top: Frame, refs: ResolvedRefs): Frame['next'] & object {
  const next: NonNullable<Frame['next']> = [];
  for (const [key, value] of Object.entries(top.node)) {
    if (key === '$ref' && isRef(top.node)) {
      const target = resolveRef(top.base, top.node.$ref, refs);
      if (target) next.push({ ...target, step: `→ ${top.node.$ref}` });
    } else if (value !== null && typeof value === 'object')
      next.push({ node: value, base: top.base, step: key });
  }
  return next;
}

function resolveRef(
  base: string,
  ref: string,
  refs: ResolvedRefs,
): { node: object; base: string } | undefined {
  const absolute = resolveUrl(base, ref);
  let node: unknown;
  try {
    node = refs.get(absolute);
  } catch {
    return undefined;
  }
  if (node === null || typeof node !== 'object') return undefined;
  const hash = absolute.indexOf('#');
  return { node, base: hash < 0 ? absolute : absolute.slice(0, hash) };
}

/**
 * `ref` made absolute against the file it is in, as swagger-parser resolves it (a relative file
 * path stays a path; a URL stays a URL).
 */
function resolveUrl(from: string, to: string): string {
  const placeholder = 'https://relative.invalid';
  const resolved = new URL(to.replace(/\\/g, '/'), new URL(from.replace(/\\/g, '/'), placeholder));
  if (resolved.origin === placeholder) return resolved.pathname + resolved.search + resolved.hash;
  return resolved.toString();
}

/** Levels of nesting on the stack: `$ref` hops add none. */
function levelsOf(stack: readonly Frame[]): number {
  return stack.filter((f) => !isRef(f.node)).length;
}

/** Where the walk is: the pointer written, then each `$ref` followed and the keys after it (the last 300 characters). */
function pathOf(stack: readonly Frame[]): string {
  let text = '#';
  for (const f of stack.slice(1))
    text += f.step.startsWith('→') ? ` ${f.step}` : `/${f.step.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return text.length > 300 ? `…${text.slice(-300)}` : text;
}
