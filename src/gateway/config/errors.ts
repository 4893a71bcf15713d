import { closest, distance } from 'fastest-levenshtein';
import { type Document, isMap, isPair, isScalar, type LineCounter, type Node } from 'yaml';
import type { z } from 'zod';

/**
 * What is wrong with a config file, said so a user can act on it: the file,
 * line and column of the key or value, the key's path, what was expected, and
 * the nearest valid key or value when one is close ("did you mean").
 */

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];
/** A JSON Schema, as far as the config's is walked here. */
interface JsonSchema {
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

/** One line per problem: `file:line:column: path: what is wrong`. */
export function describeConfigIssues(
  file: string,
  doc: Document,
  lines: LineCounter,
  issues: readonly Issue[],
  schema: unknown,
): string[] {
  const flat = issues.flatMap((issue) => flatten(issue, []));
  // A missing key that an unknown key beside it is a misspelling of is one mistake, said once.
  const suggested = new Set<string>();
  const described = flat.map((issue) => describe(issue, doc, schema as JsonSchema, suggested));
  return described
    .filter((d) => !(d.missing && suggested.has(d.missing)))
    .map((d) => `${file}:${position(doc, lines, d.path, d.key)}: ${d.text}`);
}

/** Union failures: the alternative the user most plausibly meant, with its issues under the union's path. */
function flatten(issue: Issue, prefix: Path): (Issue & { path: PropertyKey[] })[] {
  const path = [...prefix, ...issue.path];
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [{ ...issue, path }];
  const ranked = issue.errors
    .map((alternative) => ({ alternative, score: plausibility(alternative) }))
    .sort((a, b) => a.score - b.score);
  return (ranked[0]?.alternative ?? []).flatMap((inner) => flatten(inner, path));
}

/** Lower is more plausible: fewer issues, and an unknown key that is a near miss of a key of this alternative. */
function plausibility(issues: readonly Issue[]): number {
  const nearMiss = issues.some(
    (i) =>
      i.code === 'unrecognized_keys' &&
      issues.some(
        (m) =>
          m.code === 'invalid_type' &&
          i.keys.some((k) => isClose(k, String(m.path[m.path.length - 1] ?? ''))),
      ),
  );
  // A wrong `kind:` (a literal) says the user meant another alternative.
  const wrongLiteral = issues.some((i) => i.code === 'invalid_value' && i.path.length === 1);
  return issues.length * 2 - (nearMiss ? 3 : 0) + (wrongLiteral ? 10 : 0);
}

interface Described {
  /** Where to point: the value at `path`, or the key `key` of the map at `path`. */
  path: Path;
  key?: string;
  text: string;
  /** The path of a required key that is absent. */
  missing?: string;
}

function describe(
  issue: Issue & { path: PropertyKey[] },
  doc: Document,
  schema: JsonSchema,
  suggested: Set<string>,
): Described {
  const at = issue.path.map(String).join('.') || '(root)';
  if (issue.code === 'unrecognized_keys') {
    const valid = keysAt(schema, issue.path);
    const texts = issue.keys.map((key) => {
      const near = nearest(key, valid);
      if (near) suggested.add([...issue.path, near].map(String).join('.'));
      const where = [...issue.path, key].map(String).join('.');
      return near
        ? `${where}: unknown key; did you mean ${near}?`
        : `${where}: unknown key${valid.length > 0 ? `; expected one of: ${valid.join(', ')}` : ''}`;
    });
    return { path: issue.path, key: issue.keys[0] as string, text: texts.join('; ') };
  }
  if (issue.code === 'invalid_type' && !doc.hasIn(issue.path)) {
    return {
      path: issue.path.slice(0, -1),
      text: `${at}: missing (expected ${issue.expected})`,
      missing: at,
    };
  }
  if (issue.code === 'invalid_value') {
    const given = doc.getIn(issue.path);
    const options = issue.values.map(String);
    const near = typeof given === 'string' ? nearest(given, options) : undefined;
    return {
      path: issue.path,
      text: `${at}: ${JSON.stringify(given)} is not one of ${options.join(', ')}${near ? `; did you mean ${near}?` : ''}`,
    };
  }
  return { path: issue.path, text: `${at}: ${issue.message}` };
}

/** The keys an object at `path` of the config may have (every alternative's, where it may be one of several). */
function keysAt(schema: JsonSchema, path: Path): string[] {
  let nodes: JsonSchema[] = [schema];
  for (const segment of path) {
    nodes = nodes.flatMap(alternatives).flatMap((node) => {
      const named = node.properties?.[String(segment)];
      if (named) return [named];
      if (typeof segment === 'number' && node.items) return [node.items];
      return typeof node.additionalProperties === 'object' ? [node.additionalProperties] : [];
    });
  }
  return [...new Set(nodes.flatMap(alternatives).flatMap((node) => Object.keys(node.properties ?? {})))];
}

function alternatives(node: JsonSchema): JsonSchema[] {
  const inner = [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])];
  return inner.length === 0 ? [node] : [node, ...inner.flatMap(alternatives)];
}

function isClose(given: string, candidate: string): boolean {
  return distance(given, candidate) <= Math.max(2, Math.floor(candidate.length / 3));
}

function nearest(given: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const near = closest(given, [...candidates]);
  return isClose(given, near) ? near : undefined;
}

/** `line:column` (1-based) of a key, else of the value at `path`, else of its nearest ancestor present. */
function position(doc: Document, lines: LineCounter, path: Path, key?: string): string {
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : (doc.getIn(path.slice(0, depth), true) as Node | undefined);
    if (!node) continue;
    let offset = node.range?.[0];
    if (key !== undefined && depth === path.length && isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
      if (pair && isScalar(pair.key) && pair.key.range) offset = pair.key.range[0];
    }
    if (offset !== undefined) {
      const { line, col } = lines.linePos(offset);
      return `${line}:${col}`;
    }
  }
  return '1:1';
}
