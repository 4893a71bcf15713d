import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { basename, dirname, resolve } from 'node:path';
import { FINGERPRINT_KEY_FILE } from '../defaults.js';
import {
  type CanonicalLimits,
  canonicalJson,
  DEFAULT_CANONICAL_LIMITS,
  type JsonValue,
} from './canonical.js';
import { loadOrCreateSecret } from './secret-key.js';

/**
 * What one intended effect is (docs/lifecycle.md, step 4). Two calls with equal records are
 * the same intent; anything that makes the effect different belongs in here.
 */
export interface CanonicalActionRecord {
  /** The authenticated caller — never a value the model can type. */
  actor: string;
  tool: string;
  /** How the effect is delivered: `library`, `mcp`, `http`, `ssh`. */
  channel: string;
  /** Where it lands: an upstream name, a URL template, a host. */
  target: string;
  /** Which credential is used, by reference (never the secret itself). */
  credential_ref: string | null;
  method: string;
  /** Validated arguments, defaults applied, ignored fields removed, secrets digested. */
  arguments: JsonValue;
  /** Which retries count as the same intent (see contracts/scope). */
  intent_scope: JsonValue;
}

/**
 * What one action is under a business-key scope (docs/contracts.md): the key names
 * the action, so the other arguments are not part of it. They are compared
 * separately (the request digest, the full record's fingerprint) to tell a
 * repeat from a conflicting use of the key.
 */
export interface BusinessKeyRecord {
  /** The caller; null when the contract shares the key's name space across actors. */
  actor: string | null;
  tool: string;
  channel: string;
  target: string;
  credential_ref: string | null;
  method: string;
  /** The argument path the contract names, and its value (secrets already digested). */
  key: { path: string; value: JsonValue };
}

/**
 * What an upstream server is (identity/upstream-identity.ts `serverRecord`, the one home of the
 * rule): the `target` of its calls' records, so that two servers behind one handle (`npx`, `node`)
 * or one server behind two handles are told apart or joined by what runs, not by a name.
 */
export type ServerRecord =
  /** The operator named it (`upstreams.<name>.identity`): that name alone. */
  | { kind: 'named'; identity: string }
  /** A command: as given, its arguments (paths made absolute, a runner's package without its version), its cwd, the environment it is given minus the launch's own variables. */
  | { kind: 'stdio'; command: string; args: string[]; cwd: string | null; env: Record<string, string> }
  /** A Streamable HTTP URL (normalised) and the values of the headers sent with every request. */
  | { kind: 'http'; url: string; headers: Record<string, string> };

/**
 * Keyed digests for intents and secrets. The key is per installation, so a
 * fingerprint read from a leaked store cannot be tested against guessed
 * arguments, and never leaves the data directory.
 */
export class Fingerprinter {
  /** A KeyObject, not a Buffer: createHmac then skips copying and importing the key on every digest. */
  readonly #key: KeyObject;

  constructor(
    key: Buffer,
    readonly limits: CanonicalLimits = DEFAULT_CANONICAL_LIMITS,
  ) {
    if (key.length < 32) throw new Error('fingerprint key must be at least 32 bytes');
    this.#key = createSecretKey(Buffer.from(key));
  }

  /**
   * The installation's fingerprinter: the key at `keyFile` (the edges pass
   * `fingerprint_key_file`, else IDEM_FINGERPRINT_KEY_FILE), else
   * `<dataDir>/fingerprint.key` — created on first use. Processes that share a store must share this key, or the same
   * call gets different fingerprints in each.
   */
  static forDataDir(
    dataDir: string,
    options: { keyFile?: string; limits?: CanonicalLimits } = {},
  ): Fingerprinter {
    const key = options.keyFile
      ? loadOrCreateSecret(dirname(resolve(options.keyFile)), basename(options.keyFile))
      : loadOrCreateSecret(dataDir, FINGERPRINT_KEY_FILE);
    return new Fingerprinter(key, options.limits);
  }

  /** `fp_` + base64url(HMAC-SHA-256(key, "intent\0" ‖ JCS(record))). */
  intent(record: CanonicalActionRecord): string {
    return `fp_${this.#mac('intent', canonicalJson(record, this.limits))}`;
  }

  /**
   * `fp_` + base64url(HMAC-SHA-256(key, "business_key\0" ‖ JCS(record))). Its own
   * domain: an action named by a key never shares a fingerprint with a full record.
   */
  businessKey(record: BusinessKeyRecord): string {
    return `fp_${this.#mac('business_key', canonicalJson(record, this.limits))}`;
  }

  /**
   * `srv_` + base64url(HMAC-SHA-256(key, "server\0" ‖ JCS(record))): what an upstream is, as its
   * calls' records name it. Keyed, so the environment values and header values it covers can
   * never be read back or tested offline; within the default canonical limits whatever the
   * installation's argument limits are (an environment is not an argument).
   */
  server(record: ServerRecord): string {
    return `srv_${this.#mac('server', canonicalJson(record, DEFAULT_CANONICAL_LIMITS))}`;
  }

  /** Digest of an already-canonical text under a named domain (e.g. request receipts). */
  digest(domain: string, canonicalText: string): string {
    return this.#mac(domain, canonicalText);
  }

  /**
   * What a secret argument becomes before fingerprinting: equal secrets still
   * give equal fingerprints, but the value cannot be read back or guessed
   * offline without the key.
   */
  secret(value: unknown): string {
    return `hmac:${this.#mac('secret', canonicalJson(value, this.limits))}`;
  }

  #mac(domain: string, text: string): string {
    // The domain tag keeps a secret's digest from ever equalling an intent's.
    // One update of the joined text: the same bytes as three updates, at two thirds of the cost for a small record.
    return createHmac('sha256', this.#key).update(`${domain}\0${text}`).digest('base64url');
  }
}
