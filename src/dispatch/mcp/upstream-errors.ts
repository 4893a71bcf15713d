import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { neverSentCode } from '../network-errors.js';
import { NotWrittenError } from './stdio-transport.js';

/** The upstream went away with this request unanswered: whether it acted is unknown. */
export class UpstreamClosedError extends Error {
  override readonly name: string = 'UpstreamClosedError';
}

/** The upstream answered this request with a line that is JSON but not a JSON-RPC reply: whether it acted is unknown. */
export class UpstreamInvalidReplyError extends UpstreamClosedError {
  override readonly name = 'UpstreamInvalidReplyError';
}

/** The request never left: the upstream was down. Nothing happened. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
}

/**
 * Whether a failed send provably delivered nothing. A stdio line that was not
 * completely written, a connection never made, and an HTTP 4xx (the server
 * refused the message) are "nothing happened"; anything else (a connection
 * that broke after the body left, a 5xx) may have reached the upstream.
 */
export function neverDelivered(error: unknown): boolean {
  if (error instanceof NotWrittenError || error instanceof UnauthorizedError) return true;
  if (error instanceof StreamableHTTPError)
    return error.code !== undefined && error.code >= 400 && error.code < 500;
  return neverSentCode(error) !== undefined;
}
