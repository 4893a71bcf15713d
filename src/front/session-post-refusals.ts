import type { IncomingMessage } from 'node:http';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { LEGACY_VERSIONS } from '../protocol/revisions.js';
import { rpcError } from './replies.js';

/**
 * The refusals the SDK's Streamable HTTP transport makes of a 2025-era POST
 * (its rules and words), made here first, where the body has been read: the
 * SDK answers them with `id: null`, the front with the request's own id, so a
 * client can tell which request was refused.
 */
export function legacyRefusal(
  req: IncomingMessage,
  body: unknown,
  session: { required: boolean; present: boolean },
): { status: number; reply: unknown } | undefined {
  const message = Array.isArray(body) ? undefined : (body as { id?: unknown; method?: unknown });
  const id = message?.id;
  // Only a single request has an id to give; anything else is left to the SDK.
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id))) return undefined;
  const refuse = (status: number, code: number, text: string) => ({
    status,
    reply: rpcError(code, text, id as RequestId),
  });
  const accept = String(req.headers.accept ?? '');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
    return refuse(
      406,
      -32000,
      'Not Acceptable: Client must accept both application/json and text/event-stream',
    );
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();
  if (type !== 'application/json')
    return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  if (message?.method === 'initialize') return undefined;
  if (session.required && !session.present) return refuse(400, -32000, 'Bad Request: Server not initialized');
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !LEGACY_VERSIONS.includes(version))
    return refuse(
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${LEGACY_VERSIONS.join(', ')})`,
    );
  return undefined;
}
