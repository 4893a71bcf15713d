/**
 * How much an OpenAPI document may cost the gateway's start (DESIGN §13: documents Idem loads are
 * bounded in expansion, depth and size). A document is read at every start — one named by URL is
 * fetched each time, so whoever serves it decides what it holds — and a few KB can name billions
 * of objects: `$ref`s that fan out (ten properties referring to a schema of ten properties …),
 * YAML aliases of aliases, nesting thousands deep. Each bound is checked before the work it
 * bounds, in time and memory proportional to the document as written, and a document beyond one
 * stops the start with a ConfigError naming the document, the bound and its `limits.<key>`.
 *
 * The defaults stand well above GitHub's own document (@octokit/openapi, 1,221 operations, 11 MiB:
 * 585,000 objects once its `$ref`s are replaced, 29 levels deep at most, 12,660 objects in the
 * input schemas of all its tools, the largest 343): a real API's document passes, and what passes
 * costs a start at most a few times what GitHub's does. The input schemas are what costs most for
 * their size (each compiled at start: about 0.3 ms an object, 0.7 ms in one large schema).
 */
export interface OpenApiLimits {
  /** Bytes of the document and every file its `$ref`s name, together, as read or fetched. */
  bytes: number;
  /** Levels of nesting (objects and arrays), as written and once `$ref`s are replaced. */
  depth: number;
  /** Objects of the document once every `$ref` and YAML alias is replaced (a circular one left as it is). */
  expanded: number;
  /** Objects of the input schema of one tool made from it: past it, the operation is skipped (said why). */
  inputSchema: number;
  /** Objects of the input schemas of every tool made from it, together (each is compiled at start). */
  inputSchemas: number;
}

export const DEFAULT_OPENAPI_LIMITS: Readonly<OpenApiLimits> = Object.freeze({
  bytes: 32 * 2 ** 20,
  depth: 128,
  expanded: 2_000_000,
  inputSchema: 2_000,
  inputSchemas: 25_000,
});

/**
 * YAML alias resolutions allowed, weighted by the aliases inside what each one names (the `yaml`
 * package's `maxAliasCount`): an OpenAPI document rarely has any, and "a billion laughs" has
 * exponentially many. Not a setting: a document past it is an attack, not a large API.
 */
export const MAX_YAML_ALIASES = 1_000;

/** An entry's `limits:` over the defaults. */
export function limitsOf(
  configured: {
    bytes?: number | undefined;
    depth?: number | undefined;
    expanded?: number | undefined;
    input_schema?: number | undefined;
    input_schemas?: number | undefined;
  } = {},
): OpenApiLimits {
  return {
    bytes: configured.bytes ?? DEFAULT_OPENAPI_LIMITS.bytes,
    depth: configured.depth ?? DEFAULT_OPENAPI_LIMITS.depth,
    expanded: configured.expanded ?? DEFAULT_OPENAPI_LIMITS.expanded,
    inputSchema: configured.input_schema ?? DEFAULT_OPENAPI_LIMITS.inputSchema,
    inputSchemas: configured.input_schemas ?? DEFAULT_OPENAPI_LIMITS.inputSchemas,
  };
}

/** The config key of each limit, as a refusal names it. */
export const LIMIT_KEYS: Readonly<Record<keyof OpenApiLimits, string>> = Object.freeze({
  bytes: 'limits.bytes',
  depth: 'limits.depth',
  expanded: 'limits.expanded',
  inputSchema: 'limits.input_schema',
  inputSchemas: 'limits.input_schemas',
});

/** A bound a document went past: what the refusal says after the document's name. */
export class LimitExceeded extends Error {
  override readonly name = 'LimitExceeded';
  constructor(
    readonly limit: keyof OpenApiLimits | 'aliases',
    message: string,
  ) {
    super(message);
  }
}

/** `n` with thousands separators, as a refusal writes a bound. */
export function counted(n: number): string {
  return n.toLocaleString('en-US');
}
