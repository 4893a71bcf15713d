import { type Stats, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { CredentialError } from '../errors.js';
import type { CredentialSource } from './credential.js';

/** A credential in an environment variable of the gateway (read at each call: a rotated value is picked up). */
export class EnvCredentialSource implements CredentialSource {
  readonly describe: string;

  constructor(
    readonly variable: string,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.describe = `environment variable ${variable}`;
  }

  check(): void {
    // Absence is judged at call time: a variable set later (a restart with a fixed env) is picked up,
    // and a call made meanwhile is denied with the reason.
  }

  async read(): Promise<string> {
    const value = this.env[this.variable];
    if (!value) throw new CredentialError(`${this.describe} is not set`);
    return value;
  }
}

/**
 * A credential in a file: mode 0600 or stricter and owned by the gateway's
 * user, as ssh does for keys — a file others can read is already leaked, and
 * one another user owns can be swapped under us. One trailing newline is
 * dropped (editors add it).
 */
export class FileCredentialSource implements CredentialSource {
  readonly describe: string;

  constructor(readonly path: string) {
    this.describe = `file ${path}`;
  }

  check(): void {
    let info: Stats;
    try {
      info = statSync(this.path);
    } catch (error) {
      throw new CredentialError(`${this.describe} cannot be read: ${(error as NodeJS.ErrnoException).code}`);
    }
    this.#judge(info);
  }

  async read(): Promise<string> {
    let value: string;
    try {
      this.#judge(await stat(this.path));
      value = await readFile(this.path, 'utf8');
    } catch (error) {
      if (error instanceof CredentialError) throw error;
      throw new CredentialError(`${this.describe} cannot be read: ${(error as NodeJS.ErrnoException).code}`);
    }
    const trimmed = value.replace(/\r?\n$/, '');
    if (trimmed.length === 0) throw new CredentialError(`${this.describe} is empty`);
    return trimmed;
  }

  #judge(info: Stats): void {
    if (!info.isFile()) throw new CredentialError(`${this.describe} is not a regular file`);
    if ((info.mode & 0o077) !== 0)
      throw new CredentialError(
        `${this.describe} is readable or writable by others (mode ${(info.mode & 0o777).toString(8)}); chmod 600 it`,
      );
    const uid = process.getuid?.();
    if (uid !== undefined && info.uid !== uid)
      throw new CredentialError(
        `${this.describe} is owned by uid ${info.uid}, not by the gateway's user (uid ${uid}); chown it`,
      );
  }
}
