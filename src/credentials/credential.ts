/**
 * A secret a tool uses by NAME (docs/channels.md: "credential by reference"): the
 * model never sees, picks or receives its value. `value` lives only in this
 * process's memory, between resolution and the request that carries it.
 */
export interface Credential {
  /** The name the config gives it: the only part that is recorded, journaled or shown. */
  readonly name: string;
  readonly value: string;
}

/** Where one kind of secret comes from (environment, file; a vault later). */
export interface CredentialSource {
  /** A short description for errors and docs, never the value: `environment variable PAY_KEY`. */
  readonly describe: string;
  /**
   * Checks that can be made before any call (a file's owner and mode), so that
   * a misconfigured source stops the gateway at start rather than a call later.
   * Throws CredentialError.
   */
  check(): void;
  /** The current value. Throws CredentialError when it cannot be had now. */
  read(): Promise<string>;
}
