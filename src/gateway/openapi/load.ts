import SwaggerParser from '@apidevtools/swagger-parser';
import { ConfigError } from '../../errors.js';
import type { OpenApiDocument } from './document.js';
import { checkExpansion } from './expansion.js';
import { DEFAULT_OPENAPI_LIMITS, LimitExceeded, type OpenApiLimits } from './limits.js';
import { type PathSelection, pruneToSelection } from './prune.js';
import { BoundedFiles, FETCH_TIMEOUT_MS } from './read.js';
import { ValidatedDocuments } from './validated.js';

/** Whether a configured `openapi:` is a URL (fetched) rather than a file. */
export function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * The document, parsed, validated against the OpenAPI schema and with every `$ref` resolved
 * (swagger-parser), within `limits` (limits.ts): every file read and parsed through
 * BoundedFiles (read.ts), and what its `$ref`s expand to measured (expansion.ts) before anything
 * expands them. A file's external references are read from files only: nothing is fetched that
 * the config does not name as a URL. A document that does not parse or validate, or goes past a
 * limit, stops the start with a ConfigError naming the file and where.
 */
export async function loadOpenApi(
  source: string,
  where: string,
  limits: OpenApiLimits = DEFAULT_OPENAPI_LIMITS,
  validated?: ValidatedDocuments,
  /** The path items the import reads (its `include:`): a remembered document resolves only what they reach (prune.ts). */
  keep?: PathSelection,
): Promise<{
  document: OpenApiDocument;
  validation: 'done' | 'remembered';
  /** Path items resolved, of how many, when only the selection's were. */
  pathsRead?: { kept: number; of: number };
}> {
  const files = new BoundedFiles(limits);
  const options = {
    resolve: {
      file: { read: files.readFile },
      // Kept from swagger-parser: which URLs it may fetch (its safe-URL rule); only the read is ours.
      http: isUrl(source) ? { read: files.fetchUrl, timeout: FETCH_TIMEOUT_MS, redirects: 0 } : false,
    },
    // Neither falls back to a string or a buffer: a document is JSON or YAML, or it does not parse.
    parse: { json: { parse: files.parseJson }, yaml: { parse: files.parseYaml }, text: false, binary: false },
    dereference: { circular: true as const },
  };
  const parser = new SwaggerParser();
  let document: unknown;
  let validation: 'done' | 'remembered' = 'done';
  let pathsRead: { kept: number; of: number } | undefined;
  try {
    await parser.resolve(source, options);
    const key = validated ? ValidatedDocuments.keyOf(files.files, limits) : undefined;
    if (key && validated?.has(key)) {
      // These bytes passed under these bounds before (validated.ts): only the $refs are replaced.
      validation = 'remembered';
      const pruned = keep
        ? pruneToSelection(parser.api as unknown as Record<string, unknown>, keep)
        : undefined;
      pathsRead = pruned?.paths;
      document = await parser.dereference(source, (pruned?.api ?? parser.api) as typeof parser.api, options);
    } else {
      checkExpansion(parser.api, parser.$refs.paths()[0] ?? source, parser.$refs, limits);
      // The document as parsed above, and every file it names read again from what was kept.
      document = await parser.validate(source, parser.api, options);
      if (key && isOpenApi3(document)) validated?.add(key);
    }
  } catch (error) {
    const refusal = files.refusal ?? (error instanceof LimitExceeded ? error : undefined);
    if (refusal) throw new ConfigError(`${where}: ${source} is refused: ${refusal.message}`);
    throw new ConfigError(`${where}: ${source} ${problemOf(error)}`);
  }
  if (!isOpenApi3(document))
    throw new ConfigError(
      `${where}: ${source} is ${(document as { swagger?: string }).swagger ? `Swagger ${(document as { swagger?: string }).swagger}` : 'not OpenAPI 3'}; only OpenAPI 3.0 and 3.1 are imported (convert it first, e.g. with swagger2openapi)`,
    );
  return { document: document as OpenApiDocument, validation, ...(pathsRead ? { pathsRead } : {}) };
}

function isOpenApi3(document: unknown): boolean {
  return /^3\.[01]\./.test(String((document as { openapi?: unknown }).openapi ?? ''));
}

/** The parser's error as one line with the JSON pointer of where it is, when it says. */
function problemOf(error: unknown): string {
  const e = error as {
    message?: string;
    details?: { instancePath?: string; message?: string }[];
    parentPath?: string;
    path?: unknown;
  };
  // Schema validation: the first instance path and what is wrong there.
  const detail = e.details?.[0];
  if (detail)
    return `is not a valid OpenAPI document: at #${detail.instancePath ?? ''}: ${detail.message ?? 'invalid'}`;
  const message = (e.message ?? String(error)).split('\n')[0] as string;
  // A $ref that points nowhere: where the reference is.
  if (typeof e.parentPath === 'string')
    return `does not resolve: at ${readablePointer(e.parentPath)}: ${message}`;
  if (Array.isArray(e.path) && e.path.length > 0)
    return `does not resolve: at #/${e.path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}: ${message}`;
  // A syntax error: the parser's message says the line and column (its "Error parsing <file>:" said already).
  const text = (e.message ?? String(error)).replace(/^Error parsing [^\n]*?: /, '');
  return `does not parse: ${text.replace(/\n+/g, ' ').slice(0, 600)}`;
}

/** A pointer as the parser writes it, a URI fragment (`%7B` for "{"), as the document spells its keys. */
function readablePointer(fragment: string): string {
  try {
    return decodeURIComponent(fragment);
  } catch {
    return fragment;
  }
}
