import type { JsonSchema } from './document.js';

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
export function jsonSchemaOf(schema: unknown, openapi30: boolean): JsonSchema {
  return copy(schema, openapi30, new Set()) as JsonSchema;
}

/** Keywords whose value maps names to schemas: the names are copied as they are. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data (an instance, names), not a schema. */
const DATA = new Set(['enum', 'const', 'default', 'required', 'dependentRequired']);

function copy(node: unknown, openapi30: boolean, ancestors: Set<object>): unknown {
  if (Array.isArray(node)) return node.map((item) => copy(item, openapi30, ancestors));
  if (node === null || typeof node !== 'object') return node;
  if (ancestors.has(node)) return { description: '(recursive: not checked here)' };
  ancestors.add(node);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (ANNOTATIONS_ONLY.has(key)) continue;
    if (DATA.has(key)) out[key] = structuredClone(value);
    else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object')
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, schema]) => [name, copy(schema, openapi30, ancestors)]),
      );
    else out[key] = copy(value, openapi30, ancestors);
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
