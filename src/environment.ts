/**
 * Idem's own environment variables (docs/configuration.md), read here and
 * only by the edges — the CLI, the gateway, the library's `Idem.open`, the demo —
 * which pass the values down as options. The core (identity, journal, store,
 * executions…) takes what it is given and never reads the environment, so what a
 * part does depends on its arguments alone (biome's noProcessEnv holds it to that).
 */
export interface IdemEnvironment {
  /** IDEM_DATA_DIR: the directory of the SQLite store, the fingerprint key and the journal signing key. */
  dataDir: string | undefined;
  /** IDEM_STORE_URL: `postgres://…` to use PostgreSQL instead of SQLite. */
  storeUrl: string | undefined;
  /** IDEM_FINGERPRINT_KEY_FILE: the installation's fingerprint key, when not in the data directory. */
  fingerprintKeyFile: string | undefined;
  /** IDEM_JOURNAL_SIGNING_KEY_FILE: the journal signing key, when not in the data directory. */
  journalSigningKeyFile: string | undefined;
}

/** Read at each call, not once: a test or an embedding program may set a variable before it opens Idem. */
export function idemEnvironment(env: NodeJS.ProcessEnv = process.env): IdemEnvironment {
  return {
    dataDir: env.IDEM_DATA_DIR,
    storeUrl: env.IDEM_STORE_URL,
    // Empty means unset, as it always has for the key files.
    fingerprintKeyFile: env.IDEM_FINGERPRINT_KEY_FILE || undefined,
    journalSigningKeyFile: env.IDEM_JOURNAL_SIGNING_KEY_FILE || undefined,
  };
}
