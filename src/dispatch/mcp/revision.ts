import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { InitializeResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { UpstreamClosedError, UpstreamUnavailableError } from '../../errors.js';
import {
  ENVELOPE,
  envelopeOf,
  LATEST_MODERN_VERSION,
  MODERN_VERSIONS,
  type ProtocolEra,
  withEnvelope,
  withoutEnvelope,
} from '../../protocol/revisions.js';
import type { UpstreamReply } from './upstream-spec.js';

/** Who the gateway speaks for on a connection: the client's initialize parameters (or the gateway's own). */
export interface ConnectingClient {
  capabilities?: Record<string, unknown>;
  clientInfo?: { name?: string; version?: string };
}

/** The handshakes: the only requests that go out before a revision is agreed, and that carry no envelope. */
export function isHandshake(method: string): boolean {
  return method === 'initialize' || method === 'server/discover';
}

/**
 * A request's params as the upstream's revision wants them: a 2026-07-28
 * upstream gets the envelope on every request (the client's own when it
 * sent one, else the gateway's, naming the client that initialized it); a
 * 2025-era upstream never sees one.
 */
export function paramsForEra(
  method: string,
  params: JSONRPCRequest['params'],
  era: ProtocolEra | undefined,
  server: InitializeResult | undefined,
  client: ConnectingClient,
): JSONRPCRequest['params'] {
  if (isHandshake(method)) return params;
  if (era !== 'modern') return withoutEnvelope(params);
  const own = envelopeOf(params);
  return withEnvelope(params, {
    protocolVersion: server?.protocolVersion ?? LATEST_MODERN_VERSION,
    clientCapabilities: own.clientCapabilities ?? client.capabilities ?? {},
    ...(client.clientInfo ? { clientInfo: client.clientInfo } : {}),
  });
}

/** The params of `server/discover`, asking in the newest revision the gateway speaks. */
export function discoverParams(client: ConnectingClient): JSONRPCRequest['params'] {
  return withEnvelope(undefined, {
    protocolVersion: LATEST_MODERN_VERSION,
    clientCapabilities: client.capabilities ?? {},
    clientInfo: client.clientInfo ?? { name: 'idem-gateway', version: '0' },
  });
}

/**
 * What a `server/discover` answer says, in the shape of an `initialize`
 * answer, when it names a 2026-07-28 revision the gateway speaks; undefined
 * when it does not (a 2025-era server).
 */
export function discoveredServer(result: unknown, upstreamName: string): InitializeResult | undefined {
  const answer = result as Record<string, unknown> | undefined;
  const versions = Array.isArray(answer?.supportedVersions) ? (answer.supportedVersions as unknown[]) : [];
  const version = MODERN_VERSIONS.find((v) => versions.includes(v));
  if (!answer || !version) return undefined;
  const meta = answer._meta as Record<string, unknown> | undefined;
  return {
    protocolVersion: version,
    capabilities: (answer.capabilities ?? {}) as InitializeResult['capabilities'],
    serverInfo: (meta?.[ENVELOPE.serverInfo] as InitializeResult['serverInfo'] | undefined) ?? {
      name: upstreamName,
      version: '',
    },
    ...(typeof answer.instructions === 'string' ? { instructions: answer.instructions } : {}),
  };
}

/** What the negotiation needs of the connection it runs on. */
export interface HandshakeLink {
  request(method: string, params: JSONRPCRequest['params']): Promise<UpstreamReply>;
  /** The transport closed and a new one opened (a new process, for stdio), handshake only. */
  reopen(transport: Transport): Promise<Transport>;
  /** The client's own initialize parameters, sent as they came to a 2025-era upstream. */
  initializeParams: JSONRPCRequest['params'];
  client: ConnectingClient;
}

/**
 * Which revision one upstream speaks, and what it said about itself in that
 * handshake: kept across its restarts, with what a refusal taught (only
 * 2025-era, only 2026-07-28), so that a restart asks the way that worked.
 */
export class RevisionNegotiation {
  /** The revision family the connection speaks, once negotiated. */
  era: ProtocolEra | undefined;
  /** Its `initialize` answer, or, for a 2026-07-28 upstream, its `server/discover` answer in that shape. */
  server: InitializeResult | undefined;
  /** What a failed modern probe taught: the upstream is 2025-era only (do not probe it again). */
  #legacyOnly = false;
  /** What a refused `initialize` taught: the upstream is 2026-07-28 only (ask it that way first). */
  #modernOnly = false;
  readonly #upstreamName: string;
  readonly #prefer: ProtocolEra;

  constructor(upstreamName: string, prefer: ProtocolEra) {
    this.#upstreamName = upstreamName;
    this.#prefer = prefer;
  }

  /**
   * Finds the revision to speak, in the order the connection prefers: a
   * 2025-era upstream answers `initialize`; a 2026-07-28 one answers
   * `server/discover` (and may refuse `initialize`). What is learned is kept:
   * a restart asks the way that worked.
   */
  async negotiate(transport: Transport, link: HandshakeLink): Promise<void> {
    const modernFirst = (this.#prefer === 'modern' || this.#modernOnly) && !this.#legacyOnly;
    if (modernFirst) {
      try {
        if (await this.#discover(transport, link)) return;
      } catch (error) {
        // It went away on the probe (some 2025-era servers exit on a method they do not know).
        if (!(error instanceof UpstreamClosedError)) throw error;
        transport = await link.reopen(transport);
      }
    }
    let refusal: string;
    try {
      const init = await link.request('initialize', link.initializeParams);
      if (!('error' in init)) {
        this.era = 'legacy';
        this.server = init.result as InitializeResult;
        transport.setProtocolVersion?.(this.server.protocolVersion);
        await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        return;
      }
      refusal = init.error.message;
    } catch (error) {
      // A 2026-07-28-only server over HTTP refuses initialize with an HTTP error.
      if (!(error instanceof UpstreamUnavailableError)) throw error;
      refusal = error.message;
    }
    if (!modernFirst) {
      // The opening message pins a stdio connection's revision: ask again on a fresh one.
      if (await this.#discover(await link.reopen(transport), link)) {
        this.#modernOnly = true;
        return;
      }
    }
    throw new Error(`upstream ${this.#upstreamName} refused initialize: ${refusal}`);
  }

  /** Asks the upstream `server/discover`; true if it speaks a 2026-07-28 revision the gateway does. */
  async #discover(transport: Transport, link: HandshakeLink): Promise<boolean> {
    let reply: UpstreamReply;
    try {
      reply = await link.request('server/discover', discoverParams(link.client));
    } catch (error) {
      // Refused over HTTP: a 2025-era server.
      if (error instanceof UpstreamUnavailableError) {
        this.#legacyOnly = true;
        return false;
      }
      // Gone (some servers exit on a method they do not know): the same, and the restart must not probe again.
      if (error instanceof UpstreamClosedError) this.#legacyOnly = true;
      throw error;
    }
    const server = 'result' in reply ? discoveredServer(reply.result, this.#upstreamName) : undefined;
    if (!server) {
      this.#legacyOnly = true;
      return false;
    }
    this.era = 'modern';
    this.server = server;
    transport.setProtocolVersion?.(server.protocolVersion);
    return true;
  }
}
