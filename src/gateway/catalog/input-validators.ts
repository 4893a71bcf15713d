import { hash } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Distinct input schemas whose validators are kept. A gateway's upstreams list a
 * fixed set of tools, so this is never reached in practice; it stops an upstream
 * whose schemas change with every listing from growing the process.
 */
export const MAX_INPUT_VALIDATORS = 1_000;

/**
 * Validators for tools' input schemas, compiled once per distinct schema and
 * shared by every session.
 *
 * The gateway lists an upstream's tools for each session and each tools/list,
 * and every listing is a new object. Keyed by object, each listing compiled
 * every schema again (about 1.5 ms each), and Ajv kept every schema it had
 * compiled, with its code, for the life of the process: a few KiB per tool
 * per listing that never came back (bench/results/NOTES.md §8). Worse, a schema
 * with an `$id` compiled once only: the next compile threw "schema with key or
 * id already exists", so later sessions validated nothing and filled in no
 * defaults, and the same call got another identity there than in the first.
 *
 * So validators are keyed by the schema's content, and Ajv is told to forget
 * each schema once compiled (the function does not need it), which also frees
 * its `$id` for a later schema that uses the same one.
 */
export class InputValidators {
  // strict: false — upstreams write schemas for many validators; a keyword Ajv does not know is not an error here.
  readonly #ajv: Ajv2020;
  /** By SHA-256 of the schema's JSON text; undefined for a schema Ajv cannot compile. In use order, oldest first. */
  readonly #byContent = new Map<string, ValidateFunction | undefined>();

  /** `quiet`: no warnings on stderr (an unknown format): for a check whose findings are reported otherwise. */
  constructor(
    readonly max = MAX_INPUT_VALIDATORS,
    options: { quiet?: boolean } = {},
  ) {
    this.#ajv = new Ajv2020({
      strict: false,
      useDefaults: true,
      allErrors: false,
      validateFormats: true,
      ...(options.quiet ? { logger: false } : {}),
    });
    (addFormats as unknown as (a: Ajv2020) => void)(this.#ajv);
  }

  get size(): number {
    return this.#byContent.size;
  }

  /**
   * Validates and fills in defaults (mutating its argument); undefined if the schema cannot be
   * compiled — then it is the upstream's to enforce, and identity works on the raw arguments.
   * `$schema` is dropped, so that draft-07 and 2020-12 schemas both compile.
   */
  for(schema: Tool['inputSchema']): ValidateFunction | undefined {
    const { $schema: _ignored, ...rest } = schema as Record<string, unknown>;
    const key = hash('sha256', JSON.stringify(rest), 'base64');
    if (this.#byContent.has(key)) {
      const known = this.#byContent.get(key);
      // Used again: it moves to the end, last to be dropped.
      this.#byContent.delete(key);
      this.#byContent.set(key, known);
      return known;
    }
    const validate = this.#compile(rest);
    if (this.#byContent.size >= this.max)
      this.#byContent.delete(this.#byContent.keys().next().value as string);
    this.#byContent.set(key, validate);
    return validate;
  }

  #compile(schema: Record<string, unknown>): ValidateFunction | undefined {
    let validate: ValidateFunction;
    try {
      validate = this.#ajv.compile(schema);
    } catch {
      // Ajv may have kept it before failing. Removing also removes by `$id`, and when the
      // compile failed because that id was taken (a meta-schema's, say), that would drop the
      // schema holding it: a failed schema with an `$id` stays (once per content: see for()).
      if (typeof schema.$id !== 'string') this.#ajv.removeSchema(schema);
      return undefined;
    }
    // Compiled: its `$id`, if any, was free and is this schema's; Ajv lets go of both.
    this.#ajv.removeSchema(schema);
    return validate;
  }
}

/** The gateway process's validators, shared by every session and every gateway in it. */
export const inputValidators = new InputValidators();
