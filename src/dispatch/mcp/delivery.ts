import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NotWrittenError } from '../../errors.js';
import { neverSentCode } from '../network-errors.js';
import { NoHttpTransportError } from './http-transports.js';

/**
 * Whether a failed send to an upstream provably delivered nothing. A stdio
 * line that was not completely written, a connection never made, and an
 * HTTP 4xx (the server refused the message), a URL that speaks neither HTTP
 * transport, are "nothing happened"; anything
 * else (a connection that broke after the body left, a 5xx) may have
 * reached the upstream.
 */
export function neverDelivered(error: unknown): boolean {
  if (error instanceof NotWrittenError || error instanceof UnauthorizedError) return true;
  if (error instanceof NoHttpTransportError) return true;
  if (error instanceof StreamableHTTPError)
    return error.code !== undefined && error.code >= 400 && error.code < 500;
  return neverSentCode(error) !== undefined;
}
