/**
 * What a selection (`include:`) needs of a document: the path items it reads and the components
 * their `$ref`s reach, transitively — so that resolving the `$ref`s of a remembered document
 * (load.ts) costs what the selected operations cost, not what the whole document does. Anything
 * this cannot follow safely (a `$ref` to another file, or into the document outside
 * `#/components/<kind>/<name>`) keeps the whole document.
 */

/** The path items an import will read: `keep(path, item)` says which. */
export type PathSelection = (path: string, item: Record<string, unknown>) => boolean;

export interface Pruned {
  api: Record<string, unknown>;
  /** Path items kept, of how many. */
  paths: { kept: number; of: number };
}

export function pruneToSelection(api: Record<string, unknown>, keep: PathSelection): Pruned | undefined {
  const allPaths = (api.paths ?? {}) as Record<string, Record<string, unknown>>;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, item] of Object.entries(allPaths)) if (keep(path, item)) paths[path] = item;
  const components = (api.components ?? {}) as Record<string, Record<string, unknown>>;
  // Kinds read by name rather than by $ref (securitySchemes, extensions) are kept whole, and
  // walked: what they refer to is reached too.
  const reached: Record<string, Record<string, unknown>> = {};
  for (const [kind, entries] of Object.entries(components))
    if (!BY_REFERENCE.has(kind)) reached[kind] = entries;
  const seen = new Set<string>();
  // Whatever else the document holds (webhooks, extensions) is kept, and walked for the same reason.
  const rest = Object.entries(api).filter(([key]) => key !== 'paths' && key !== 'components');
  const pending: unknown[] = [paths, ...Object.values(reached), ...rest.map(([, value]) => value)];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      pending.push(...node);
      continue;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key !== '$ref' || typeof value !== 'string') {
        pending.push(value);
        continue;
      }
      const target = componentOf(value);
      if (!target) return undefined;
      if (seen.has(value)) continue;
      seen.add(value);
      const [kind, name] = target;
      const found = components[kind]?.[name];
      // A dangling reference: left for the dereference to report as it always has.
      if (found === undefined) return undefined;
      if (!BY_REFERENCE.has(kind)) continue;
      reached[kind] ??= {};
      (reached[kind] as Record<string, unknown>)[name] = found;
      pending.push(found);
    }
  }
  return {
    api: { ...api, paths, components: { ...reached } },
    paths: { kept: Object.keys(paths).length, of: Object.keys(allPaths).length },
  };
}

/** The component kinds an operation reaches by `$ref` only: those are cut to what is reached. */
const BY_REFERENCE = new Set([
  'schemas',
  'responses',
  'parameters',
  'requestBodies',
  'headers',
  'examples',
  'links',
  'callbacks',
  'pathItems',
]);

/** `#/components/<kind>/<name>[/…]` → [kind, name]; anything else, undefined. */
function componentOf(ref: string): [string, string] | undefined {
  const match = /^#\/components\/([^/]+)\/([^/]+)(?:\/.*)?$/.exec(ref);
  if (!match) return undefined;
  const pointerPart = (part: string) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
  return [pointerPart(match[1] as string), pointerPart(match[2] as string)];
}
