import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

/** A line an upstream wrote on stdout that is not a JSON-RPC message (a banner, a console.log). */
export interface SkippedLine {
  /** `not_json`: not JSON at all; `not_jsonrpc`: JSON, but not a JSON-RPC 2.0 message. */
  reason: 'not_json' | 'not_jsonrpc';
  /** The whole line (at most `maxLineBytes`): whoever logs it excerpts it, after scrubbing it. */
  line: string;
  bytes: number;
  /** For `not_jsonrpc`: the JSON value, so that a malformed answer to a request in flight can settle it. */
  value?: unknown;
}

/** The id of a skipped line shaped like an answer (an id, a result or an error): that request will get no other. */
export function answeredIdOf(skipped: SkippedLine): { id: unknown } | undefined {
  const value = skipped.value as { id?: unknown; result?: unknown; error?: unknown } | null | undefined;
  if (typeof value !== 'object' || value === null || !('result' in value || 'error' in value))
    return undefined;
  return { id: value.id };
}

/** A line grew past the bound without a newline: it cannot be read, and it may have been a reply. */
export class LineTooLongError extends Error {
  override readonly name = 'LineTooLongError';
}

/**
 * Splits an upstream's stdout into JSON-RPC messages, in place of the SDK's
 * ReadBuffer (same three methods: append, readMessage, clear). The SDK's
 * buffer throws on a line that is not a message, and its transport reports
 * that as an error — which the gateway must treat as a broken connection, so
 * one `console.log` in a tool handler cost the whole upstream and left its
 * call's outcome unknown. Here such a line is handed to `onSkipped` and
 * reading goes on, as the SDK's own client and other proxies do.
 *
 * Memory is bounded: an unfinished line longer than `maxLineBytes` (the SDK's
 * 10 MiB by default) throws LineTooLongError and is dropped; complete lines
 * wait only until the transport reads them, which it does after every chunk.
 */
export class StdoutLines {
  readonly #maxLineBytes: number;
  readonly #onSkipped: (skipped: SkippedLine) => void;
  /** The unfinished line: the chunks since the last newline. */
  #partial: Buffer[] = [];
  #partialBytes = 0;
  /** Complete lines not read yet. */
  readonly #lines: Buffer[] = [];

  constructor(onSkipped: (skipped: SkippedLine) => void, maxLineBytes = STDIO_DEFAULT_MAX_BUFFER_SIZE) {
    this.#onSkipped = onSkipped;
    this.#maxLineBytes = maxLineBytes;
  }

  append(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      this.#lines.push(Buffer.concat([...this.#partial, chunk.subarray(start, end)]));
      this.#partial = [];
      this.#partialBytes = 0;
      start = end + 1;
    }
    if (start < chunk.length) {
      this.#partial.push(chunk.subarray(start));
      this.#partialBytes += chunk.length - start;
    }
    if (this.#partialBytes > this.#maxLineBytes) {
      this.#partial = [];
      this.#partialBytes = 0;
      throw new LineTooLongError(
        `the upstream wrote a line longer than ${this.#maxLineBytes} bytes on stdout without a newline`,
      );
    }
  }

  /** The next message, skipping (and reporting) lines that are not one; null when no complete line is left. */
  readMessage(): JSONRPCMessage | null {
    for (let raw = this.#lines.shift(); raw !== undefined; raw = this.#lines.shift()) {
      const line = raw.toString('utf8').replace(/\r$/, '');
      if (line.trim() === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        this.#onSkipped({ reason: 'not_json', line, bytes: raw.length });
        continue;
      }
      if (isPlainResult(parsed)) return parsed;
      const message = JSONRPCMessageSchema.safeParse(parsed);
      if (message.success) return message.data;
      this.#onSkipped({ reason: 'not_jsonrpc', line, bytes: raw.length, value: parsed });
    }
    return null;
  }

  clear(): void {
    this.#partial = [];
    this.#partialBytes = 0;
    this.#lines.length = 0;
  }
}

/**
 * A result response the schema certainly accepts and would copy unchanged: exactly `jsonrpc`
 * "2.0", a string or integer `id` and an object `result` without `_meta` (the one member its
 * loose schema checks). Most lines an upstream writes are one, and the schema's union costs
 * ~25 µs each (issue 30); anything else, `_meta` included, goes through the schema.
 */
function isPlainResult(value: unknown): value is JSONRPCMessage {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  const keys = Object.keys(message);
  if (keys.length !== 3 || message.jsonrpc !== '2.0') return false;
  const { id, result } = message;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  return (
    result !== null && typeof result === 'object' && !Array.isArray(result) && !Object.hasOwn(result, '_meta')
  );
}
