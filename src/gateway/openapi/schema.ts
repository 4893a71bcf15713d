import type { JsonSchema } from './document.js';
import { counted, LIMIT_KEYS, LimitExceeded, type OpenApiLimits } from './limits.js';

/**
 * What the input schemas of one document's tools may take, each and together: each is a copy
 * (below) that the gateway compiles at start, and the copy of a schema whose parts refer to one
 * another is a tree of every path through them — a few schemas that all refer to all the others
 * unfold into millions, which the check of the document's expansion (expansion.ts) does not see,
 * since swagger-parser leaves circular `$ref`s as they are. Counted as the copies are made.
 */
export class SchemaBudget {
  readonly #limits: Pick<OpenApiLimits, 'inputSchema' | 'inputSchemas' | 'depth'>;
  #used = 0;
  #operation = 0;

  constructor(limits: Pick<OpenApiLimits, 'inputSchema' | 'inputSchemas' | 'depth'>) {
    this.#limits = limits;
  }

  /** The copies that follow are one more operation's (its own bound starts again). */
  nextOperation(): void {
    this.#operation = 0;
  }

  /** One more object copied, `depth` levels down; past a bound, a LimitExceeded. */
  take(depth: number): void {
    if (++this.#used > this.#limits.inputSchemas)
      throw new LimitExceeded(
        'inputSchemas',
        `the input schemas of its operations come to more than ${counted(this.#limits.inputSchemas)} objects together (${LIMIT_KEYS.inputSchemas})`,
      );
    if (++this.#operation > this.#limits.inputSchema)
      throw new LimitExceeded(
        'inputSchema',
        `its input schema comes to more than ${counted(this.#limits.inputSchema)} objects once its $refs are replaced (${LIMIT_KEYS.inputSchema})`,
      );
    if (depth > this.#limits.depth)
      throw new LimitExceeded(
        'depth',
        `an input schema nests deeper than ${counted(this.#limits.depth)} levels once its $refs are replaced (${LIMIT_KEYS.depth})`,
      );
  }
}

/** Keywords of an OpenAPI schema that say nothing a validator of the arguments needs. */
const ANNOTATIONS_ONLY = new Set(['example', 'examples', 'xml', 'externalDocs', 'discriminator']);

/**
 * An OpenAPI schema as the JSON Schema (2020-12) the gateway validates arguments with: a copy,
 * since the dereferenced document shares one object for every use of a component. OpenAPI 3.0's
 * dialect is translated — `nullable: true` adds "null" to the type, a boolean
 * `exclusiveMinimum`/`exclusiveMaximum` becomes the number form — and 3.1's is JSON Schema already.
 * A schema that contains itself (a tree, a linked list) is cut where it recurs: from there on
 * any value is accepted, and the target judges it.
 */
export function jsonSchemaOf(
  schema: unknown,
  openapi30: boolean,
  budget = new SchemaBudget({
    inputSchema: Number.POSITIVE_INFINITY,
    inputSchemas: Number.POSITIVE_INFINITY,
    depth: Number.POSITIVE_INFINITY,
  }),
): JsonSchema {
  return copy(schema, openapi30, new Set(), budget) as JsonSchema;
}

/** Keywords whose value maps names to schemas: the names are copied as they are. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data (an instance, names), not a schema. */
const DATA = new Set(['enum', 'const', 'default', 'required', 'dependentRequired']);

function copy(node: unknown, openapi30: boolean, ancestors: Set<object>, budget: SchemaBudget): unknown {
  if (node === null || typeof node !== 'object') return node;
  // Counted before it recurses: the depth is that of the recursion itself.
  budget.take(ancestors.size + 1);
  if (Array.isArray(node)) return node.map((item) => copy(item, openapi30, ancestors, budget));
  if (ancestors.has(node)) return { description: '(recursive: not checked here)' };
  ancestors.add(node);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (ANNOTATIONS_ONLY.has(key)) continue;
    if (DATA.has(key)) out[key] = structuredClone(value);
    else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object')
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, schema]) => [name, copy(schema, openapi30, ancestors, budget)]),
      );
    else out[key] = copy(value, openapi30, ancestors, budget);
  }
  ancestors.delete(node);
  return openapi30 ? fromOpenApi30(out) : out;
}

function fromOpenApi30(schema: Record<string, unknown>): Record<string, unknown> {
  if (schema.nullable === true) {
    if (typeof schema.type === 'string') schema.type = [schema.type, 'null'];
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  }
  if (typeof schema.nullable === 'boolean') delete schema.nullable;
  for (const [exclusive, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (schema[exclusive] === true && typeof schema[bound] === 'number') {
      schema[exclusive] = schema[bound];
      delete schema[bound];
    } else if (schema[exclusive] === false) delete schema[exclusive];
  }
  return schema;
}
