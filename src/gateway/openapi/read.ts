import { createReadStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Composer, LineCounter, Parser } from 'yaml';
import { counted, LIMIT_KEYS, LimitExceeded, MAX_YAML_ALIASES, type OpenApiLimits } from './limits.js';

/** How long fetching a document (or a file its `$ref`s name) by URL may take, body included. */
export const FETCH_TIMEOUT_MS = 30_000;

/**
 * Reads and parses the files of one document (the document, and every file its `$ref`s name)
 * within its limits: as the resolver and parser plugins of swagger-parser (its own read whole
 * files and URLs without a bound, and parse YAML whose aliases nothing counts). Bytes are counted
 * as they arrive and the read stops at the bound (a URL that never ends, `/dev/zero` named as a
 * file); nesting is bounded before anything recurses into it (JSON.parse does not recurse; YAML's
 * tree is measured on its token stream, which is read without recursion, before it is composed);
 * YAML aliases are bounded as they are resolved. Every file read is kept, so the second pass over
 * the document (the validation's) reads nothing again.
 *
 * The first bound a file goes past is kept (`refusal`): swagger-parser wraps what a plugin throws
 * in its own errors, and the refusal must be said as it is.
 */
export class BoundedFiles {
  readonly #limits: OpenApiLimits;
  readonly #read = new Map<string, Buffer>();
  #bytes = 0;
  refusal: LimitExceeded | undefined;

  constructor(limits: OpenApiLimits) {
    this.#limits = limits;
  }

  /** Every file read so far, by the URL or path it was read from. */
  get files(): ReadonlyMap<string, Buffer> {
    return this.#read;
  }

  /** swagger-parser's `resolve.file.read`. */
  readonly readFile = (file: { url: string }): Promise<Buffer> =>
    this.#once(file.url, async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of createReadStream(pathOf(file.url), { highWaterMark: 1 << 20 })) {
        this.#take((chunk as Buffer).length, file.url);
        chunks.push(chunk as Buffer);
      }
      return Buffer.concat(chunks);
    });

  /** swagger-parser's `resolve.http.read`: no redirect followed, the body counted as it comes. */
  readonly fetchUrl = (file: { url: string }): Promise<Buffer> =>
    this.#once(file.url, async () => {
      const response = await fetch(file.url, {
        redirect: 'manual',
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      if (response.status >= 300 && response.status < 400)
        throw new Error(`HTTP ${response.status}: redirects are not followed`);
      if (!response.ok) throw new Error(`HTTP ERROR ${response.status}`);
      // A length said up front past the bound is refused before a byte is read; the bytes are
      // counted as they come all the same (a length may be absent, or wrong).
      const declared = Number(response.headers.get('content-length'));
      if (Number.isFinite(declared) && declared > 0) this.#take(declared, file.url, false);
      const chunks: Buffer[] = [];
      if (response.body)
        for await (const chunk of response.body) {
          this.#take(chunk.length, file.url);
          chunks.push(Buffer.from(chunk));
        }
      return Buffer.concat(chunks);
    });

  /** swagger-parser's `parse.json.parse`. */
  readonly parseJson = (file: { url: string; data: unknown }): unknown => {
    const text = textOf(file.data);
    if (text.trim().length === 0) return undefined;
    const value: unknown = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    const deepest = depthOf(value, this.#limits.depth);
    if (deepest !== undefined)
      this.#refuse(
        tooDeep(
          this.#limits.depth,
          `${file.url}#${deepest.length > 120 ? `${deepest.slice(0, 120)}…` : deepest}`,
        ),
      );
    return value;
  };

  /** swagger-parser's `parse.yaml.parse`. */
  readonly parseYaml = (file: { url: string; data: unknown }): unknown => {
    const text = textOf(file.data);
    const lines = new LineCounter();
    const tokens = Array.from(new Parser(lines.addNewLine).parse(text));
    const deepest = yamlDepthExceeded(tokens, this.#limits.depth);
    if (deepest !== undefined) {
      const { line, col } = lines.linePos(deepest);
      this.#refuse(tooDeep(this.#limits.depth, `${file.url} (${line}:${col})`));
    }
    const documents = Array.from(new Composer({}).compose(tokens, true, text.length));
    const [document, another] = documents;
    if (!document) return undefined;
    const problem =
      document.errors[0] ?? (another && { pos: another.range, message: 'more than one YAML document' });
    if (problem) {
      const { line, col } = lines.linePos(problem.pos[0]);
      throw new SyntaxError(`${problem.message.split('\n')[0]} (${line}:${col})`);
    }
    try {
      return document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
    } catch (error) {
      if (error instanceof ReferenceError && /alias/i.test(error.message))
        this.#refuse(
          new LimitExceeded(
            'aliases',
            `its YAML aliases expand past ${counted(MAX_YAML_ALIASES)} (an alias of aliases of aliases, "a billion laughs"), in ${file.url}`,
          ),
        );
      throw error;
    }
  };

  async #once(url: string, read: () => Promise<Buffer>): Promise<Buffer> {
    const kept = this.#read.get(url);
    if (kept) return kept;
    const data = await read();
    this.#read.set(url, data);
    return data;
  }

  /** Counts `n` more bytes read; past the bound, refuses (`counting`: add them, else only compare). */
  #take(n: number, url: string, counting = true): void {
    const total = this.#bytes + n;
    if (counting) this.#bytes = total;
    if (total > this.#limits.bytes)
      this.#refuse(
        new LimitExceeded(
          'bytes',
          `it is larger than ${counted(this.#limits.bytes)} bytes (${LIMIT_KEYS.bytes}; the document and the files its $refs name, together), reading ${url}`,
        ),
      );
  }

  #refuse(error: LimitExceeded): never {
    this.refusal ??= error;
    throw error;
  }
}

function tooDeep(limit: number, where: string): LimitExceeded {
  return new LimitExceeded(
    'depth',
    `it nests deeper than ${counted(limit)} levels (${LIMIT_KEYS.depth}), at ${where}`,
  );
}

/** A resolver's `file.url` as a path: swagger-parser gives an absolute path, `%`-encoded like a URL. */
function pathOf(url: string): string {
  if (/^file:/i.test(url)) return fileURLToPath(url);
  try {
    return decodeURI(url).replace(/%23/g, '#').replace(/%3F/gi, '?');
  } catch {
    return url;
  }
}

function textOf(data: unknown): string {
  return Buffer.isBuffer(data) ? data.toString('utf8') : String(data ?? '');
}

/**
 * The JSON pointer of the first value nested deeper than `limit` (objects and arrays), else
 * undefined. An explicit stack: the walk itself must not overflow on what it is checking.
 */
export function depthOf(root: unknown, limit: number): string | undefined {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value: root, depth: 0, path: '' }];
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop() as (typeof stack)[number];
    if (value === null || typeof value !== 'object') continue;
    if (depth >= limit) return path;
    for (const [key, child] of Object.entries(value))
      if (child !== null && typeof child === 'object')
        stack.push({
          value: child,
          depth: depth + 1,
          path: `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`,
        });
  }
  return undefined;
}

/** A YAML token as the `yaml` package's CST gives it: what nests is a collection's items. */
interface CstToken {
  type?: string;
  offset?: number;
  value?: CstToken;
  items?: Array<{ key?: CstToken | null; value?: CstToken | null }>;
}

/** The offset of the first YAML collection nested deeper than `limit` (from its token stream), else undefined. */
function yamlDepthExceeded(tokens: readonly unknown[], limit: number): number | undefined {
  const stack: Array<{ token: CstToken; depth: number }> = tokens.map((token) => ({
    token: token as CstToken,
    depth: 0,
  }));
  while (stack.length > 0) {
    const { token, depth } = stack.pop() as (typeof stack)[number];
    if (token.type === 'document' && token.value) stack.push({ token: token.value, depth });
    if (!Array.isArray(token.items)) continue;
    if (depth >= limit) return token.offset ?? 0;
    for (const item of token.items)
      for (const child of [item.key, item.value])
        if (child && typeof child === 'object') stack.push({ token: child, depth: depth + 1 });
  }
  return undefined;
}
