import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { OpenApiLimits } from './limits.js';

/** Documents remembered as validated, per data directory: the newest kept, the rest forgotten. */
const KEPT = 16;
/** The folder under the data directory. */
export const VALIDATED_DIR = 'openapi-validated';

const PARSER_VERSION = (
  createRequire(import.meta.url)('@apidevtools/swagger-parser/package.json') as { version: string }
).version;

/**
 * What a start remembers of the documents it validated: one empty file per document, named by the
 * hash of its bytes (and of every file its `$ref`s name), the limits it was held to and the
 * validator's version. The same bytes under the same limits were valid and within their bounds
 * then and are now: a later start skips the validation against the OpenAPI schema and the
 * expansion check (together about 8 s of GitHub's 11 MiB document) and only replaces the `$ref`s.
 * A document that changes by one byte is validated again. Lives in the data directory, which only
 * the gateway's user can write (0700): a marker there is as trusted as the store beside it.
 */
export class ValidatedDocuments {
  readonly #dir: string;

  constructor(dataDir: string) {
    this.#dir = join(dataDir, VALIDATED_DIR);
  }

  /** The key of a document: its files (by where they were read from) and the bounds it passed. */
  static keyOf(files: ReadonlyMap<string, Buffer>, limits: OpenApiLimits): string {
    const hash = createHash('sha256').update(`swagger-parser ${PARSER_VERSION}\n${JSON.stringify(limits)}\n`);
    for (const url of [...files.keys()].sort()) {
      const data = files.get(url) as Buffer;
      hash.update(`${url}\n${data.length}\n`).update(data);
    }
    return hash.digest('hex');
  }

  has(key: string): boolean {
    try {
      const marker = join(this.#dir, key);
      statSync(marker);
      // Touched: the documents in use are the newest, and stay.
      const now = new Date();
      utimesSync(marker, now, now);
      return true;
    } catch {
      return false;
    }
  }

  /** Remembers `key` as validated; a marker that cannot be written costs only the next start's time. */
  add(key: string): void {
    try {
      mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
      writeFileSync(join(this.#dir, key), '');
      const markers = readdirSync(this.#dir)
        .map((name) => ({ name, at: statSync(join(this.#dir, name)).mtimeMs }))
        .sort((a, b) => b.at - a.at);
      for (const stale of markers.slice(KEPT)) rmSync(join(this.#dir, stale.name), { force: true });
    } catch {
      // A data directory that cannot be written: the next start validates again.
    }
  }
}
