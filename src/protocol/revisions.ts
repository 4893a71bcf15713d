import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';

/**
 * The two eras of MCP (the v2 SDK's words). `legacy`: 2024-10-07 … 2025-11-25,
 * negotiated once by `initialize`, with sessions. `modern`: 2026-07-28 and
 * later, no handshake and no sessions; every request carries its protocol
 * version and the client's capabilities in `_meta` (the envelope), and a
 * server advertises itself through `server/discover`.
 *
 * The gateway speaks both at every front and to every upstream, and each
 * direction is negotiated on its own: this file is the one home of what
 * tells the eras apart and of how a message of one era is made fit for the
 * other.
 */
export type ProtocolEra = 'legacy' | 'modern';

/** Revisions the gateway serves through `initialize`, newest first (what SDK 1.x speaks). */
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

/** Revisions the gateway serves per request with an envelope, newest first. */
export const MODERN_VERSIONS = ['2026-07-28'];

export const LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0] as string;
export const LATEST_MODERN_VERSION = MODERN_VERSIONS[0] as string;

/** JSON-RPC error (SEP-2243): a standard or parameter header missing, or disagreeing with the body. */
export const HEADER_MISMATCH = -32020;

/** JSON-RPC error: the request needs a client capability its envelope does not declare. */
export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;

/** JSON-RPC error of a modern request naming a revision this side does not serve. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The JSON-RPC error for a 2026-era request naming a revision the gateway does not serve. */
export function unsupportedVersionError(version: string) {
  return {
    code: UNSUPPORTED_PROTOCOL_VERSION,
    message: `Unsupported protocol version ${version}: this gateway serves ${MODERN_VERSIONS.join(', ')} per request, and 2025-era revisions through initialize`,
    data: { supported: MODERN_VERSIONS, requested: version },
  };
}

export const ENVELOPE = {
  protocolVersion: PROTOCOL_VERSION_META_KEY,
  clientCapabilities: CLIENT_CAPABILITIES_META_KEY,
  clientInfo: CLIENT_INFO_META_KEY,
  logLevel: LOG_LEVEL_META_KEY,
  serverInfo: SERVER_INFO_META_KEY,
} as const;

/** Revision identifiers are ISO dates: the modern era starts at 2026-07-28. */
export function isModernVersion(version: string): boolean {
  return version >= (MODERN_VERSIONS[MODERN_VERSIONS.length - 1] as string);
}

/** What a client named in `initialize`, if the gateway speaks it; else the newest legacy revision. */
export function legacyVersionFor(requested: unknown): string {
  return typeof requested === 'string' && LEGACY_VERSIONS.includes(requested)
    ? requested
    : LATEST_LEGACY_VERSION;
}

type Params = { _meta?: Record<string, unknown> } & Record<string, unknown>;

/** The envelope a modern request carries (empty for a legacy one). */
export interface Envelope {
  protocolVersion?: string;
  clientCapabilities?: Record<string, unknown>;
  clientInfo?: { name?: string; version?: string };
  logLevel?: string;
}

export function envelopeOf(params: unknown): Envelope {
  const meta = (params as Params | undefined)?._meta;
  if (!meta || typeof meta !== 'object') return {};
  const pick = <T>(key: string, check: (v: unknown) => boolean) =>
    check(meta[key]) ? (meta[key] as T) : undefined;
  const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  const envelope: Envelope = {};
  const version = pick<string>(ENVELOPE.protocolVersion, (v) => typeof v === 'string');
  if (version) envelope.protocolVersion = version;
  const capabilities = pick<Record<string, unknown>>(ENVELOPE.clientCapabilities, isObject);
  if (capabilities) envelope.clientCapabilities = capabilities;
  const info = pick<{ name?: string; version?: string }>(ENVELOPE.clientInfo, isObject);
  if (info) envelope.clientInfo = info;
  const level = pick<string>(ENVELOPE.logLevel, (v) => typeof v === 'string');
  if (level) envelope.logLevel = level;
  return envelope;
}

/** True if a request's params claim the per-request envelope (a modern request). */
export function hasEnvelope(params: unknown): boolean {
  return envelopeOf(params).protocolVersion !== undefined;
}

/**
 * A request's params without the envelope: what a legacy upstream is sent.
 * Other `_meta` keys (progress token, the execution id, extensions) stay.
 */
export function withoutEnvelope<P>(params: P): P {
  const meta = (params as Params | undefined)?._meta;
  if (!meta || !Object.values(ENVELOPE).some((key) => key in meta)) return params;
  const rest = Object.fromEntries(
    Object.entries(meta).filter(([key]) => !(Object.values(ENVELOPE) as string[]).includes(key)),
  );
  const { _meta: _, ...others } = params as Params;
  return (Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others) as P;
}

/** A request's params with an envelope: what a modern upstream is sent (an envelope already there stays). */
export function withEnvelope<P>(
  params: P,
  envelope: Required<Pick<Envelope, 'protocolVersion'>> & Envelope,
): P {
  const base = (params ?? {}) as Params;
  const meta = { ...base._meta };
  meta[ENVELOPE.protocolVersion] = envelope.protocolVersion;
  meta[ENVELOPE.clientCapabilities] ??= envelope.clientCapabilities ?? {};
  if (envelope.clientInfo && !(ENVELOPE.clientInfo in meta)) meta[ENVELOPE.clientInfo] = envelope.clientInfo;
  if (envelope.logLevel && !(ENVELOPE.logLevel in meta)) meta[ENVELOPE.logLevel] = envelope.logLevel;
  return { ...base, _meta: meta } as P;
}

/** Results a 2026-07-28 receiver reads cache hints from (SEP-2549): they are required there. */
const CACHEABLE = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'server/discover',
]);

/**
 * A result as a modern client must see it: `resultType` set (senders must),
 * and the cache hints of cacheable results, at their most careful (nothing
 * cached, private) when the upstream gave none — a legacy upstream never does.
 */
export function modernResult(
  method: string | undefined,
  result: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...result };
  out.resultType ??= 'complete';
  if (method && CACHEABLE.has(method)) {
    out.ttlMs ??= 0;
    out.cacheScope ??= 'private';
  }
  return out;
}

/**
 * A result as a legacy client must see it: without the modern-only fields.
 * An `input_required` result has no legacy form and is not passed here.
 */
export function legacyResult(result: Record<string, unknown>): Record<string, unknown> {
  if (!('resultType' in result) && !('ttlMs' in result) && !('cacheScope' in result)) return result;
  const { resultType: _type, ttlMs: _ttl, cacheScope: _scope, ...rest } = result;
  return rest;
}

/** A modern upstream's answer that asks the client for more input (a multi-round-trip request). */
export function isInputRequired(result: unknown): boolean {
  return (result as { resultType?: unknown } | undefined)?.resultType === 'input_required';
}
