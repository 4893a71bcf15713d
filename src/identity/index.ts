/**
 * Identity: what a call *is* (docs/lifecycle.md, steps 2 and 4) — the folder's exports in one
 * list; code inside src/ imports the file it needs directly. The package's face (src/index.ts)
 * exports none of it.
 */
export { type CallerInfo, defaultActorOf } from './actor.js';
export { type ArgumentPath, type ArgumentRules, NO_ARGUMENT_RULES } from './argument-rules.js';
export {
  PREVIEW_MAX_CHARS,
  type PreparedArguments,
  prepareArguments,
  secretPathsFromSchema,
} from './arguments.js';
export {
  type CanonicalLimits,
  canonicalJson,
  DEFAULT_CANONICAL_LIMITS,
  type JsonValue,
  toJsonValue,
} from './canonical.js';
export { resolveDataDir } from './data-dir.js';
export {
  type BusinessKeyRecord,
  type CanonicalActionRecord,
  Fingerprinter,
  type ServerRecord,
} from './fingerprint.js';
export {
  MIN_REDACTED_SECRET_LENGTH,
  redactSecrets,
  SECRET_PLACEHOLDER,
  secretValues,
} from './redaction.js';
export { type RequestId, type RequestKeyParts, renderRequestId, requestKey } from './request-key.js';
export { loadOrCreateSecret } from './secret-key.js';
export {
  type ServerRecordOptions,
  serverRecord,
  type UpstreamDescription,
  upstreamIdentity,
} from './upstream-identity.js';
