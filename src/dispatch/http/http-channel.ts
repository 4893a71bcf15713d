import { Agent, type Dispatcher, request } from 'undici';
import { durationMs } from '../../contracts/duration.js';
import type { Credentials } from '../../credentials/index.js';
import { HTTP_TOOL_TIMEOUT_MS } from '../../defaults.js';
import {
  CredentialError,
  DispatchRefusedError,
  NotDispatchedError,
  OutcomeUnknownError,
} from '../../errors.js';
import { headWithoutSecrets } from '../../identity/secret-cut.js';
import type { ToolResult } from '../../store/outcome.js';
import type { ActionChannel, ActionDispatch } from '../channel.js';
import { neverSentCode } from '../network-errors.js';
import {
  type AllowedTargets,
  checkUrl,
  type PinnedAddress,
  pinAddress,
  type ResolveHost,
  resolveWithDns,
} from './address-guard.js';
import { refusedBeforeSending, statusOutcome } from './outcome.js';
import type { HttpToolSpec } from './spec.js';
import { allowedTargets } from './targets.js';
import {
  buildBody,
  buildUrl,
  checkTemplateArguments,
  requestHeaders,
  setHeader,
  withQuery,
} from './template.js';

export interface HttpChannelOptions {
  credentials: Credentials;
  /** How a host name is resolved (once per request). Default: the system resolver. */
  resolveHost?: ResolveHost;
  /**
   * The connection pool for an origin pinned to an address. Default: an undici
   * Agent whose lookup answers only that address. Tests count calls to it to
   * show that a refused request never got as far as a connection.
   */
  dispatcherFor?: (origin: string, pinned: PinnedAddress, connectTimeoutMs: number) => Dispatcher;
}

/** Connection pools kept per channel (one per origin and pinned address). */
const MAX_POOLS = 32;
/** Bounded excerpts of a target's answer in error texts. */
const EXCERPT_CHARS = 500;

/**
 * An HTTP action tool (docs/channels-http.md): builds the request from the arguments,
 * checks where it leads before any connection, pins the connection to the
 * address it resolved, sends the execution id as the idempotency key, and
 * reads the answer into completed / failed / unknown.
 */
export class HttpChannel implements ActionChannel {
  readonly kind = 'http';
  /** Where a URL leads is judged as it is sent (the host resolved then): a refusal is a denial. */
  readonly checksBeforeSending = true;
  readonly target: string;
  readonly credential: string | null;
  readonly method: string;
  readonly allowed: AllowedTargets;
  readonly timeoutMs: number;
  readonly #spec: HttpToolSpec;
  readonly #options: HttpChannelOptions;
  readonly #resolveHost: ResolveHost;
  readonly #pools = new Map<string, Dispatcher>();

  /** Throws an Error naming the tool when the spec cannot be made safe (a host placeholder with no allow.hosts). */
  constructor(
    readonly tool: string,
    spec: HttpToolSpec,
    options: HttpChannelOptions,
  ) {
    this.#spec = spec;
    this.#options = options;
    this.#resolveHost = options.resolveHost ?? resolveWithDns;
    this.method = spec.method;
    this.credential = spec.credential?.name ?? null;
    if (spec.credential && !options.credentials.has(spec.credential.name))
      throw new Error(
        `http_tools.${tool}: credential "${spec.credential.name}" is not declared under credentials:`,
      );
    const { origin, allowed } = allowedTargets(tool, spec);
    this.allowed = allowed;
    this.target = spec.target ?? origin;
    this.timeoutMs =
      spec.timeout !== undefined
        ? durationMs(spec.timeout, `http_tools.${tool}.timeout`)
        : spec.contract?.timeout !== undefined
          ? durationMs(spec.contract.timeout, `http_tools.${tool}.contract.timeout`)
          : HTTP_TOOL_TIMEOUT_MS;
  }

  /** Throws InvalidInputError for an argument the URL or a header needs and the call does not give in a form it can carry. */
  check(args: Record<string, unknown>): void {
    checkTemplateArguments(this.#spec.url, this.#spec.headers, args, {
      ...(this.#spec.query ? { query: this.#spec.query } : {}),
      ...(this.#spec.optional_headers ? { optionalHeaders: this.#spec.optional_headers } : {}),
    });
  }

  async dispatch(args: Record<string, unknown>, ctx: ActionDispatch): Promise<ToolResult> {
    const spec = this.#spec;
    const url = withQuery(buildUrl(spec.url, args), spec.query, args);
    checkUrl(url, this.allowed);
    const headers = requestHeaders(spec, args);
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(buildBody(spec.body, args));
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
        headers['content-type'] = 'application/json';
    }
    const credentialHeader = await this.#credentialHeader(url);
    // Ours win over a header template of the same name, whatever its case: one value each.
    if (credentialHeader) setHeader(headers, credentialHeader.name, credentialHeader.value);
    if (ctx.executionId) setHeader(headers, spec.idempotency_header, ctx.executionId);

    // One timer for the whole call, cleared when it ends: AbortSignal.timeout's would stay armed
    // (and held) for the full timeout after every call, thousands at once under load.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The operation timed out.', 'TimeoutError')),
      this.timeoutMs,
    );
    timer.unref();
    try {
      return await this.#exchange(url, headers, body, credentialHeader, deadline.signal, ctx);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The request and its redirects (as many as the spec allows), then the answer read into a result. */
  async #exchange(
    first: URL,
    headers: Record<string, string>,
    payload: string | undefined,
    credentialHeader: { name: string; value: string } | undefined,
    timeout: AbortSignal,
    { signal: cancelled, sending }: ActionDispatch,
  ): Promise<ToolResult> {
    const spec = this.#spec;
    const signal = cancelled ? AbortSignal.any([timeout, cancelled]) : timeout;
    let url = first;
    let body = payload;
    let method = spec.method;
    for (let hop = 0; ; hop++) {
      // Resolved once per hop, judged, and the connection pinned to exactly that address:
      // a name that resolves elsewhere a moment later (DNS rebinding) changes nothing.
      const pinned = await this.#pin(url, hop);
      // Cancelled (or out of time) while resolving: nothing has left yet, which a later retry may rely on.
      if (hop === 0 && signal.aborted)
        throw new NotDispatchedError('The call ended before the request was sent.');
      if (hop === 0) await sending?.();
      const response = await this.#send(url, pinned, method, headers, body, signal, timeout, hop);
      const location = response.headers.location;
      if (response.statusCode >= 300 && response.statusCode < 400 && typeof location === 'string') {
        await response.body.dump().catch(() => {});
        if (hop >= spec.redirects)
          throw new OutcomeUnknownError(
            `The target answered ${response.statusCode} (a redirect), which this tool does not follow; whether the action took effect is not known.`,
          );
        const next = this.#redirectTarget(url, location, response.statusCode);
        // The credential goes only where it was meant to: not to another origin.
        if (credentialHeader && next.origin !== url.origin) delete headers[credentialHeader.name];
        if (
          response.statusCode === 303 ||
          (response.statusCode <= 302 && method !== 'GET' && method !== 'HEAD')
        ) {
          method = 'GET';
          body = undefined;
          for (const key of Object.keys(headers))
            if (key.toLowerCase() === 'content-type') delete headers[key];
        }
        url = next;
        continue;
      }
      return this.#result(response, signal, timeout);
    }
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.close().catch(() => {})));
  }

  /** The credential as a header to send; one that goes in the query is set on `url` instead (undefined then). */
  async #credentialHeader(url: URL): Promise<{ name: string; value: string } | undefined> {
    const use = this.#spec.credential;
    if (!use) return undefined;
    let value: string;
    try {
      ({ value } = await this.#options.credentials.resolve(use.name));
    } catch (error) {
      if (error instanceof CredentialError) throw new DispatchRefusedError(error.message);
      throw error;
    }
    if (use.scheme === 'bearer') return { name: 'authorization', value: `Bearer ${value}` };
    if (use.scheme === 'basic') {
      const encoded = Buffer.from(`${use.username}:${value}`).toString('base64');
      // The base64 form does not contain the value: it is a secret of its own.
      this.#options.credentials.registerDerived(encoded);
      return { name: 'authorization', value: `Basic ${encoded}` };
    }
    if (use.scheme === 'query') {
      // Set, not appended: an argument of the same name cannot stand in for (or beside) the key.
      url.searchParams.set(use.param, value);
      // Form-encoded in the URL, the value is a secret of its own wherever the URL is quoted back.
      const encoded = new URLSearchParams({ k: value }).toString().slice(2);
      if (encoded !== value) this.#options.credentials.registerDerived(encoded);
      return undefined;
    }
    return { name: use.header, value: `${use.prefix ?? ''}${value}` };
  }

  async #pin(url: URL, hop: number): Promise<PinnedAddress> {
    try {
      return await pinAddress(url, this.allowed, this.#resolveHost);
    } catch (error) {
      // After the first hop a request was sent and answered: a refused redirect does not make it "not executed".
      if (hop > 0) throw redirectRefused(error);
      throw error;
    }
  }

  #redirectTarget(from: URL, location: string, status: number): URL {
    let next: URL;
    try {
      next = new URL(location, from);
      checkUrl(next, this.allowed);
    } catch (error) {
      throw redirectRefused(error, status);
    }
    return next;
  }

  async #send(
    url: URL,
    pinned: PinnedAddress,
    method: HttpToolSpec['method'],
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
    timeout: AbortSignal,
    hop: number,
  ): Promise<Dispatcher.ResponseData> {
    try {
      return await request(url, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        dispatcher: this.#pool(url.origin, pinned),
        signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (error) {
      if (hop === 0 && refusedBeforeSending(error))
        throw new DispatchRefusedError(`the request could not be built: ${(error as Error).message}`);
      const code = neverSentCode(error);
      if (code && hop === 0)
        throw new NotDispatchedError(`Could not connect to ${url.origin} (${code}); nothing was sent.`);
      throw unknownFrom(error, url, timeout, this.timeoutMs);
    }
  }

  async #result(
    response: Dispatcher.ResponseData,
    signal: AbortSignal,
    timeout: AbortSignal,
  ): Promise<ToolResult> {
    const max = this.#spec.max_response_bytes;
    // Read a secret's length past the limit, so that one echoed across the cut is scrubbed
    // whole before the cut is made (docs/channels.md, "Credentials").
    const secrets = this.#options.credentials.knownValues();
    const lookahead = secrets.reduce((n, s) => Math.max(n, Buffer.byteLength(s)), 0);
    let read: { text: string; complete: boolean };
    try {
      read = await readBounded(response.body, max + lookahead, signal);
    } catch (error) {
      throw unknownFrom(error, undefined, timeout, this.timeoutMs);
    }
    const kept = headWithoutSecrets(read.text, max, secrets, { unit: 'bytes', complete: read.complete });
    // Uncut, the body goes on as the target sent it (parsed as JSON, scrubbed by the engine).
    const text = kept.cut ? `${kept.text}\n[truncated at ${max} bytes]` : read.text;
    const status = response.statusCode;
    const outcome = statusOutcome(status, this.#spec.outcome);
    if (outcome === 'unknown')
      throw new OutcomeUnknownError(
        `The target answered HTTP ${status}, which does not say whether the action took effect: ${excerpt(text, secrets)}`,
      );
    let parsed: unknown = text;
    const type = String(response.headers['content-type'] ?? '');
    if (/[/+]json\b/i.test(type)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not the JSON it claims to be: handed on as text.
      }
    }
    return {
      ...(outcome === 'failed' ? { isError: true } : {}),
      content: [{ type: 'text', text: outcome === 'failed' ? `HTTP ${status}: ${text}` : text }],
      structuredContent: { status, body: parsed as never },
    };
  }

  #pool(origin: string, pinned: PinnedAddress): Dispatcher {
    const connectTimeoutMs = Math.min(this.timeoutMs, 10_000);
    if (this.#options.dispatcherFor) return this.#options.dispatcherFor(origin, pinned, connectTimeoutMs);
    const key = `${origin}|${pinned.address}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      // Bounded: a host from the arguments with DNS that rotates must not grow this without end.
      if (this.#pools.size >= MAX_POOLS) {
        const [oldest, idle] = this.#pools.entries().next().value as [string, Dispatcher];
        this.#pools.delete(oldest);
        idle.close().catch(() => {});
      }
      pool = new Agent({
        connect: {
          timeout: connectTimeoutMs,
          // The name keeps its part in TLS (SNI, certificate check); only the address is fixed.
          lookup: (_host, options, callback) => {
            if ((options as { all?: boolean }).all)
              (callback as (e: null, a: PinnedAddress[]) => void)(null, [pinned]);
            else (callback as (e: null, a: string, f: number) => void)(null, pinned.address, pinned.family);
          },
        },
      });
      this.#pools.set(key, pool);
    }
    return pool;
  }
}

function redirectRefused(error: unknown, status?: number): Error {
  if (error instanceof DispatchRefusedError || error instanceof NotDispatchedError)
    return new OutcomeUnknownError(
      `The target answered with a redirect${status ? ` (${status})` : ''} that was not followed: ${error.message}. Whether the action took effect is not known.`,
    );
  if (error instanceof TypeError)
    return new OutcomeUnknownError('The target redirected to an invalid URL; not followed.');
  return error as Error;
}

function unknownFrom(error: unknown, url: URL | undefined, timeout: AbortSignal, timeoutMs: number): Error {
  if (timeout.aborted)
    return new OutcomeUnknownError(`No full answer within ${timeoutMs} ms after the request was sent.`);
  const name = (error as { name?: string }).name;
  if (name === 'AbortError')
    return new OutcomeUnknownError('The call was cancelled after the request was sent.');
  const code = (error as { code?: string }).code;
  return new OutcomeUnknownError(
    `The connection${url ? ` to ${url.origin}` : ''} failed after the request was sent${code ? ` (${code})` : ''}.`,
  );
}

/** At most `max` bytes of the body; `complete: false` when there was more (it is then left unread). */
async function readBounded(
  body: Dispatcher.ResponseData['body'],
  max: number,
  signal: AbortSignal,
): Promise<{ text: string; complete: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    signal.throwIfAborted();
    const buffer = chunk as Buffer;
    if (size + buffer.length > max) {
      chunks.push(buffer.subarray(0, max - size));
      body.destroy();
      return { text: Buffer.concat(chunks).toString('utf8'), complete: false };
    }
    chunks.push(buffer);
    size += buffer.length;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), complete: true };
}

/** The start of a body for an error text, scrubbed of secrets before it is cut (see headWithoutSecrets). */
function excerpt(text: string, secrets: readonly string[]): string {
  const kept = headWithoutSecrets(text, EXCERPT_CHARS, secrets, { unit: 'chars' });
  return kept.cut ? `${kept.text}…` : kept.text || '(empty body)';
}
