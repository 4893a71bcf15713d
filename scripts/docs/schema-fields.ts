/**
 * A JSON Schema (as zod writes it) read as the rows of a reference table: one row per key, by
 * its dotted path (`store.pool.max`, `upstreams.<name>.command`), with its type, default and
 * description. Only the shapes the config's schema uses are read; anything else is "any".
 */
import { code } from './markdown.js';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  format?: string;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
}

export interface FieldRow {
  key: string;
  type: string;
  default: string;
  description: string;
}

export interface WalkOptions {
  /** Where `$ref`s point (the root's `$defs`). */
  defs: Record<string, JsonSchema>;
  /** A key whose schema this says is described elsewhere: its row says `type`, and its keys are not listed. */
  elsewhere?: (schema: JsonSchema) => string | undefined;
}

/** The rows of every key under `schema` (an object), each prefixed by `prefix`. */
export function fieldRows(schema: JsonSchema, prefix: string, options: WalkOptions, note = ''): FieldRow[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).flatMap(([name, sub]) => {
    const key = prefix ? `${prefix}.${name}` : name;
    return keyRows(key, sub, required.has(name), options, note);
  });
}

/** The row of one key, then the rows of what it holds. */
export function keyRows(
  key: string,
  schema: JsonSchema,
  required: boolean,
  options: WalkOptions,
  note = '',
): FieldRow[] {
  const elsewhere = options.elsewhere?.(schema);
  const type = elsewhere ?? `${typeOf(schema, options)}${required ? ', required' : ''}`;
  const row: FieldRow = {
    key,
    type,
    default: schema.default === undefined ? '' : code(JSON.stringify(schema.default)),
    description: [note, schema.description ?? ''].filter(Boolean).join(' '),
  };
  return elsewhere ? [row] : [row, ...innerRows(key, schema, options)];
}

function innerRows(key: string, schema: JsonSchema, options: WalkOptions): FieldRow[] {
  if (schema.properties) return fieldRows(schema, key, options);
  if (isRecord(schema)) {
    const value = schema.additionalProperties;
    // A map of plain values is said by its own row ("map of name → string"); one of objects gets a row per key of them.
    const plain = innerRows(`${key}.<name>`, value, options).length === 0 && !value.description;
    return plain ? [] : keyRows(`${key}.<name>`, value, false, options);
  }
  if (schema.type === 'array' && schema.items) return innerRows(`${key}[]`, schema.items, options);
  if (schema.anyOf) {
    const objects = schema.anyOf.filter((variant) => variant.properties);
    const discriminator = discriminatorOf(objects);
    return objects.flatMap((variant) => {
      const { [discriminator ?? '']: _, ...rest } = variant.properties ?? {};
      const label = discriminator
        ? `(${discriminator}: ${String(variant.properties?.[discriminator]?.const)})`
        : objects.length > 1
          ? `(with ${(variant.required ?? Object.keys(rest)).slice(0, 1).map(code).join('')})`
          : '';
      return fieldRows(
        { ...variant, properties: rest },
        key,
        options,
        [label, variant.description].filter(Boolean).join(' '),
      );
    });
  }
  return [];
}

/** The key every variant fixes to a constant (`kind`), if there is one. */
function discriminatorOf(variants: JsonSchema[]): string | undefined {
  if (variants.length < 2) return undefined;
  const first = Object.entries(variants[0]?.properties ?? {}).find(([, p]) => p.const !== undefined)?.[0];
  return first && variants.every((v) => v.properties?.[first]?.const !== undefined) ? first : undefined;
}

function isRecord(schema: JsonSchema): schema is JsonSchema & { additionalProperties: JsonSchema } {
  return (
    schema.properties === undefined &&
    typeof schema.additionalProperties === 'object' &&
    schema.additionalProperties !== null
  );
}

/** A duration: `"30s"`, `"15m"`, or a number of milliseconds (src/gateway/config-duration.ts). */
function isDuration(schema: JsonSchema): boolean {
  const [a, b, ...more] = schema.anyOf ?? [];
  return more.length === 0 && a?.type === 'string' && b?.type === 'number' && b.minimum === 0;
}

/** What a value of the key is, in a few words. */
export function typeOf(schema: JsonSchema, options: WalkOptions): string {
  if (schema.$ref) {
    const target = options.defs[schema.$ref.replace('#/$defs/', '')];
    return target && isAnyJson(target, schema.$ref) ? 'any JSON value' : 'see the schema';
  }
  if (schema.const !== undefined) return code(JSON.stringify(schema.const));
  if (schema.enum) return schema.enum.map((value) => code(String(value))).join(' | ');
  if (schema.anyOf) {
    if (isDuration(schema)) return 'duration (`"30s"`, `"15m"`, or ms)';
    const objects = schema.anyOf.filter((variant) => variant.properties);
    const others = schema.anyOf.filter((variant) => !variant.properties).map((v) => typeOf(v, options));
    const types = [...new Set([...others, ...(objects.length > 0 ? ['object'] : [])])];
    return types.join(' or ');
  }
  switch (schema.type) {
    case 'string':
      return schema.format === 'uri' ? 'URL' : 'string';
    case 'integer':
    case 'number':
      return `${schema.type}${range(schema)}`;
    case 'boolean':
      return 'boolean';
    case 'array':
      return `list of ${schema.items ? typeOf(schema.items, options) : 'any'}${schema.minItems ? ` (at least ${schema.minItems})` : ''}`;
    case 'object':
      return isRecord(schema) ? `map of name → ${typeOf(schema.additionalProperties, options)}` : 'object';
    default:
      return 'any';
  }
}

function range(schema: JsonSchema): string {
  const max =
    schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER ? schema.maximum : undefined;
  if (schema.exclusiveMinimum === 0 && max === undefined) return ' > 0';
  if (schema.minimum !== undefined && max !== undefined) return ` ${schema.minimum}–${max}`;
  if (schema.minimum !== undefined) return ` ≥ ${schema.minimum}`;
  return '';
}

/** z.json(): any of string, number, boolean, null, a list or a map of the same. */
function isAnyJson(schema: JsonSchema, self: string): boolean {
  const types = (schema.anyOf ?? []).map((variant) => variant.type);
  return (
    ['string', 'number', 'boolean', 'null', 'array', 'object'].every((t) => types.includes(t)) &&
    (schema.anyOf ?? []).some((variant) => variant.items?.$ref === self)
  );
}
