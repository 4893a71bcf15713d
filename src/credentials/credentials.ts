import { isAbsolute, resolve } from 'node:path';
import { CredentialError } from '../errors.js';
import type { KnownSecrets } from '../identity/redaction.js';
import type { CredentialsConfig } from './config.js';
import type { Credential, CredentialSource } from './credential.js';
import { EnvCredentialSource, FileCredentialSource } from './sources.js';

/**
 * The credentials a gateway (or a library user) declared, by name. Resolving
 * one registers its value with the redaction layer first, so that no answer,
 * stored result, journal entry or log line can carry it afterwards.
 */
export class Credentials {
  readonly #sources: ReadonlyMap<string, CredentialSource>;
  readonly #secrets: KnownSecrets;

  constructor(sources: ReadonlyMap<string, CredentialSource>, secrets: KnownSecrets) {
    this.#sources = sources;
    this.#secrets = secrets;
  }

  /**
   * From a config's `credentials:` section; relative file paths are taken from
   * `baseDir`. Every source is checked now: a file with loose permissions stops
   * the start with a CredentialError naming it.
   */
  static fromConfig(
    config: CredentialsConfig | undefined,
    secrets: KnownSecrets,
    options: { baseDir?: string; env?: NodeJS.ProcessEnv } = {},
  ): Credentials {
    const sources = new Map<string, CredentialSource>();
    for (const [name, spec] of Object.entries(config ?? {})) {
      const source =
        'env' in spec
          ? new EnvCredentialSource(spec.env, options.env)
          : new FileCredentialSource(
              isAbsolute(spec.file) ? spec.file : resolve(options.baseDir ?? process.cwd(), spec.file),
            );
      try {
        source.check();
      } catch (error) {
        throw new CredentialError(`credentials.${name}: ${(error as Error).message}`);
      }
      sources.set(name, source);
    }
    return new Credentials(sources, secrets);
  }

  has(name: string): boolean {
    return this.#sources.has(name);
  }

  names(): string[] {
    return [...this.#sources.keys()];
  }

  /** The credential's current value. Throws CredentialError (naming it, never its value) when it cannot be had. */
  async resolve(name: string): Promise<Credential> {
    const source = this.#sources.get(name);
    if (!source) throw new CredentialError(`credential "${name}" is not declared under credentials:`);
    let value: string;
    try {
      value = await source.read();
    } catch (error) {
      throw new CredentialError(
        `credential "${name}" cannot be resolved: ${error instanceof CredentialError ? error.message : `${source.describe} could not be read`}`,
      );
    }
    try {
      this.#secrets.add(value);
    } catch (error) {
      throw new CredentialError(`credential "${name}" (${source.describe}): ${(error as Error).message}`);
    }
    return { name, value };
  }

  /**
   * Reads every declared credential now and registers its value for redaction, so that it is
   * scrubbed from the first call of the process on — not only once an action tool has resolved it:
   * a stdio upstream may hold it too (a file its user can read, a variable handed over on purpose)
   * and echo it on any path. A credential that cannot be read now, or is too short to scrub, is
   * left for its call to deny; the reasons are returned (names and sources, never values).
   */
  async registerAll(): Promise<string[]> {
    const problems: string[] = [];
    for (const name of this.#sources.keys()) {
      try {
        await this.resolve(name);
      } catch (error) {
        problems.push((error as Error).message);
      }
    }
    return problems;
  }

  /**
   * Every value resolved (or derived) so far, in each form it may be echoed
   * as, longest first: what a channel that cuts a target's answer must not
   * leave half of (src/identity/secret-cut.ts).
   */
  knownValues(): readonly string[] {
    return this.#secrets.values();
  }

  /**
   * Registers a value derived from a credential (a Basic authorization header's
   * base64) so that it is scrubbed too.
   */
  registerDerived(value: string): void {
    this.#secrets.add(value);
  }
}
